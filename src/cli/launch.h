// hipguard run's launcher (launch.cpp).
#pragma once

#include <string>

namespace hipguard {

// Runs argv (LD_PRELOAD and the other settings already in the environment).
// Without a report, or with "%p" in its path, it execs the command. With one
// report file for the job, it opens the file first (an unusable path is an
// error before anything runs), runs the command as its child, completes the
// report once the command is done and returns the command's exit status (2
// if the command succeeded but the report could not be written).
int launch(char** argv, const std::string& report);

}  // namespace hipguard
