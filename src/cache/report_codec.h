// The report model (check_paths.h: FileReport, ImageReport with its parsed code objects, LibrarySummary)
// recorded as bytes and read back whole: what a check cache keeps of the files it checked, so that a
// re-check hands the same reports to its sink without reading the files again. The CLI's only (the
// shim caches nothing).
#pragma once

#include <cstdint>
#include <string>

#include "hipguard/check_paths.h"

namespace hipguard {

// Format of the recorded bytes: "HGRC", this version (u32, little-endian), the events, an end tag and
// the xxHash64 of everything before it. Bumped whenever a recorded type gains, loses or changes a
// field: a recording of another version is refused, never half read.
inline constexpr uint32_t kReportCodecVersion = 1;

// A FileSink that records what it is handed, in order (begin_file, image, end_file, library). Strings,
// numbers and enumerations are kept exactly (a kernel name that is not UTF-8 stays what it was), so a
// replay hands over reports equal to the ones recorded.
class RecordingSink : public FileSink {
 public:
  // `limit`: bytes recorded at most; past it the recording is given up (finish() returns "").
  explicit RecordingSink(uint64_t limit = UINT64_MAX);
  void begin_file(const std::string& path) override;
  void image(ImageReport&& img) override { record(img); }
  void end_file(FileReport&& file) override { record(file); }
  void library(LibrarySummary&& library) override;
  // As image() and end_file(), for a report the caller keeps.
  void record(const ImageReport& img);
  void record(const FileReport& file);
  // The recording, framed and checksummed ("" when it went past the limit); the sink is empty afterwards.
  std::string finish();

 private:
  bool within_limit();
  std::string out_;
  uint64_t limit_;
  bool over_ = false;
};

// Hands the events of `recorded` (RecordingSink::finish) to `sink` in their order. The bytes are checked
// whole before anything is handed over: a recording that is truncated, of another version, fails its
// checksum or holds a value no report can hold (an enumeration out of range, a diagnostic code not in
// diagnostics.def, a count larger than the bytes left, reports nested more than kMaxRecordedNesting
// deep: a file and 15 levels of members) is refused (HG101: unreadable) and `sink` gets nothing. A null `sink` only
// checks.
inline constexpr unsigned kMaxRecordedNesting = 16;  // archives in archives (a .deb's .tar's .a)
Status replay(Bytes recorded, FileSink* sink);

}  // namespace hipguard
