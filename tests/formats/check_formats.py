#!/usr/bin/env python3
"""Every machine-readable output of hipguard, on real inputs, checked by parsers
that are not hipguard's own:

- JSON (check --json, inspect --json, the shim's HIPGUARD_REPORT): validated
  against docs/report.schema.json with python3-jsonschema; the summary is
  recounted here from the files, images, verdicts and diagnostics.
- JUnit (check --junit, HIPGUARD_REPORT=*.xml): parsed with xml.etree; one
  suite per target, at most one failure per test case, counts equal to the
  JSON summary of the same run.
- SARIF (check --sarif): the properties GitHub code scanning reads, one rule
  per code of docs/diagnostics.md with its section as help, one result per
  finding of the JSON report.

Inputs that are absent (the corpus, Debian's rocSPARSE, the hipcc-built test
programs) are skipped with a message; anything else that does not hold fails.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

try:
    import jsonschema
except ImportError:
    sys.exit("python3-jsonschema is missing: run scripts/deps.sh")

ROCSPARSE = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0"
failures = []
checked = 0


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def expect(cond, what):
    global checked
    checked += 1
    if not cond:
        fail(what)
    return cond


def run(args, env=None):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return p.returncode, p.stdout


class Formats:
    def __init__(self, opts):
        self.o = opts
        with open(opts.schema) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        self.validator = jsonschema.Draft202012Validator(schema)
        with open(opts.docs) as f:
            self.codes = re.findall(r"^## (HG\d{3}) ", f.read(), re.M)

    # ---------------------------------------------------------------- JSON
    def json_report(self, name, doc, targets=None):
        errors = sorted(self.validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            fail(f"{name}: schema: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
        expect(not errors, f"{name}: valid against docs/report.schema.json")
        if targets is not None:
            expect(doc["targets"] == targets, f"{name}: targets {doc['targets']} == {targets}")
        # The summary, recounted from the report itself.
        s = doc["summary"]
        ts = doc["targets"]
        want = {"files": len(doc["files"]), "images": 0, "code_objects": 0, "kernels": 0, "file_errors": 0}
        sev = {"error": 0, "warning": 0, "note": 0}
        structural = {"error": 0, "warning": 0, "note": 0, "failed_images": 0}
        per = [{"target": t, "can_run": 0, "cannot_run": 0, "other_target": 0, "error": 0, "warning": 0, "note": 0}
               for t in ts]
        # Kernel libraries, recounted from their files: name -> files, per target [loadable, other, failing, kernels].
        libs = {}

        def diag(d):
            sev[d["severity"]] += 1
            if not d["target"]:
                structural[d["severity"]] += 1
            else:
                per[ts.index(d["target"])][d["severity"]] += 1

        for f in doc["files"]:
            file_ok = True
            if any(d["severity"] == "error" for d in f["diagnostics"]):
                want["file_errors"] += 1
                file_ok = False
            for d in f["diagnostics"]:
                diag(d)
            for img in f["images"]:
                want["images"] += 1
                want["code_objects"] += len(img["code_objects"])
                want["kernels"] += sum(len(c["kernels"]) for c in img["code_objects"])
                expect(len(img["verdicts"]) == len(ts), f"{name}: one verdict per target")
                lib = libs.setdefault(f["library"], [0, [[0, 0, 0, 0] for _ in ts]]) if f.get("library") else None
                if lib:
                    lib[0] += 1
                for i, v in enumerate(img["verdicts"]):
                    expect(v["target"] == ts[i], f"{name}: verdicts in target order")
                    other = v.get("other_target", False)
                    expect(not other or (lib and not v["can_run"] and v["selection"] == "none"),
                           f"{name}: other_target only for a library file that selects nothing")
                    per[i]["other_target" if other else "can_run" if v["can_run"] else "cannot_run"] += 1
                    if lib:
                        c = lib[1][i]
                        c[1] += other
                        if v["selection"] != "none":
                            c[0] += 1
                            c[3] += v["kernels"]
                        c[2] += not other and not v["can_run"]
                if ts:
                    expect(img["ok"] == all(v["can_run"] or v.get("other_target") for v in img["verdicts"]),
                           f"{name}: image ok = every target can run or does not load it")
                structural_error = any(d["severity"] == "error" and not d["target"] for d in img["diagnostics"])
                if not ts:
                    expect(img["ok"] == (not structural_error), f"{name}: image ok = no structural error")
                    structural["failed_images"] += not img["ok"]
                else:
                    # A structural error makes the image fail structurally even when a target can run.
                    structural["failed_images"] += structural_error
                for d in img["diagnostics"]:
                    diag(d)
                file_ok = file_ok and img["ok"]
            expect(f["ok"] == file_ok, f"{name}: {f['path']}: file ok")
        for k, v in want.items():
            expect(s[k] == v, f"{name}: summary.{k} = {s[k]}, recounted {v}")
        expect(s["diagnostics"] == sev, f"{name}: summary.diagnostics {s['diagnostics']} == {sev}")
        expect(s["structural"] == structural, f"{name}: summary.structural {s['structural']} == {structural}")
        expect(s["targets"] == per, f"{name}: summary.targets {s['targets']} == {per}")
        got = {l["name"]: [l["files"], [[t["code_objects"], t["other_target"], t["failing"], t["kernels"]]
                                         for t in l["targets"]]] for l in doc.get("libraries", [])}
        expect(got == libs, f"{name}: libraries {got} == recounted {libs}")
        for l in doc.get("libraries", []):
            for t in l["targets"]:
                expect(t["can_run"] == (t["code_objects"] > 0 and t["failing"] == 0), f"{name}: library can_run")
                lacks = [d for f in doc["files"] if f["path"] == l["name"] for d in f["diagnostics"]
                         if d["code"] == "HG214" and d["target"] == t["target"]]
                expect(len(lacks) == (t["code_objects"] == 0), f"{name}: {l['name']}: HG214 iff nothing to load")
        return doc

    # --------------------------------------------------------------- JUnit
    def junit(self, name, text, summary, targets):
        root = ET.fromstring(text)
        expect(root.tag == "testsuites", f"{name}: root <testsuites>")
        suites = root.findall("testsuite")
        names = targets if targets else ["structural"]
        expect([x.get("name") for x in suites] == ["hipguard " + t for t in names], f"{name}: one suite per target")
        tests = failures_ = 0
        for i, suite in enumerate(suites):
            cases = suite.findall("testcase")
            failed = [c for c in cases if c.find("failure") is not None]
            for c in cases:
                expect(len(c.findall("failure")) <= 1, f"{name}: at most one failure per test case")
                expect(c.get("classname") == "hipguard." + names[i], f"{name}: classname names the target")
                fl = c.find("failure")
                if fl is not None:
                    expect(re.fullmatch(r"HG\d{3}|cannot-run", fl.get("type") or "") is not None,
                           f"{name}: failure type {fl.get('type')}")
                    expect(bool(fl.get("message")), f"{name}: failure message")
            expect(int(suite.get("tests")) == len(cases), f"{name}: suite tests attribute = test cases")
            expect(int(suite.get("failures")) == len(failed), f"{name}: suite failures attribute = failed cases")
            # The counts of the JSON summary of the same input.
            if targets:
                t = summary["targets"][i]
                want_fail = t["cannot_run"] + summary["file_errors"]
            else:
                want_fail = summary["structural"]["failed_images"] + summary["file_errors"]
            others = summary["targets"][i]["other_target"] if targets else 0
            expect(len(cases) == summary["images"] - others + summary["file_errors"],
                   f"{name}: {names[i]}: {len(cases)} test cases = images + file errors of the summary")
            expect(len(failed) == want_fail, f"{name}: {names[i]}: {len(failed)} failures = {want_fail} of the summary")
            tests += len(cases)
            failures_ += len(failed)
        expect(int(root.get("tests")) == tests and int(root.get("failures")) == failures_, f"{name}: root counts")

    # --------------------------------------------------------------- SARIF
    def sarif(self, name, doc, report):
        expect(doc.get("version") == "2.1.0", f"{name}: version 2.1.0")
        expect("sarif-2.1.0" in doc.get("$schema", ""), f"{name}: $schema")
        expect(len(doc["runs"]) == 1, f"{name}: one run")
        r = doc["runs"][0]
        driver = r["tool"]["driver"]
        expect(driver["name"] == "hipguard" and driver["version"] == report["tool"]["version"], f"{name}: driver")
        rules = driver["rules"]
        ids = [x["id"] for x in rules]
        expect(ids == self.codes, f"{name}: one rule per code of docs/diagnostics.md, in order")
        for x in rules:
            expect(x["help"]["markdown"].startswith("## " + x["id"] + " ") and "**Cause.**" in x["help"]["markdown"],
                   f"{name}: {x['id']}: help is its docs section")
            expect(bool(x["shortDescription"]["text"]) and bool(x["fullDescription"]["text"]), f"{name}: descriptions")
            expect(x["defaultConfiguration"]["level"] in ("error", "warning", "note"), f"{name}: rule level")
        results = r["results"]
        by_level = {"error": 0, "warning": 0, "note": 0}
        paths = {f["path"] for f in report["files"]}
        fingerprints = set()
        for res in results:
            i = res.get("ruleIndex")
            expect(i is not None and ids[i] == res["ruleId"], f"{name}: ruleIndex points at ruleId")
            expect(res["level"] in by_level, f"{name}: result level")
            by_level[res["level"]] += 1
            expect(bool(res["message"]["text"]), f"{name}: result message")
            uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            expect(re.fullmatch(r"[A-Za-z0-9\-._~/%:]+", uri) is not None, f"{name}: uri {uri!r} is a URI reference")
            plain = re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), uri)
            plain = plain[len("file://"):] if plain.startswith("file://") else plain
            expect(any(p == plain or p.lstrip("./") == plain for p in paths), f"{name}: uri {uri} names a file")
            fingerprints.add(json.dumps(res["partialFingerprints"], sort_keys=True) + res["message"]["text"])
        expect(by_level == report["summary"]["diagnostics"],
               f"{name}: results by level {by_level} == JSON summary {report['summary']['diagnostics']}")
        # Which GPUs (no --target): the JSON report's "support" as it is, in the run's properties.
        expect(r.get("properties", {}).get("support") == report.get("support"),
               f"{name}: runs[0].properties.support == the JSON report's support")

    # ----------------------------------------------------------------- CLI
    def check(self, name, targets, paths, expect_status=None):
        cli = self.o.cli
        targs = [a for t in targets for a in ("--target", t)]
        st, out = run([cli, "check", "--json"] + targs + paths)
        doc = json.loads(out)
        self.json_report(name + " --json", doc)
        if expect_status is not None:
            expect(st == expect_status, f"{name}: exit status {st} == {expect_status}")
        for fmt in ("--junit", "--sarif"):
            st2, out2 = run([cli, "check", fmt] + targs + paths)
            expect(st2 == st, f"{name} {fmt}: same exit status as --json ({st2} vs {st})")
            if fmt == "--junit":
                self.junit(name + " --junit", out2, doc["summary"], doc["targets"])
            else:
                self.sarif(name + " --sarif", json.loads(out2), doc)
        return doc

    def inspect(self, name, paths):
        st, out = run([self.o.cli, "inspect", "--json"] + paths)
        doc = json.loads(out)
        self.json_report(name + " inspect --json", doc, targets=[])
        return doc

    def shim(self):
        o = self.o
        app = os.path.join(o.apps, "vector_add_gfx90a")
        if not (o.apps and os.path.exists(app) and os.path.exists(os.path.join(o.simrt, "libamdhip64.so.5"))):
            print("SKIP shim report: hipcc test programs or the simulated runtime not built")
            return
        with tempfile.TemporaryDirectory() as d:
            for target, ext in (("gfx942:sramecc+:xnack-", "json"), ("gfx90a:sramecc-:xnack-", "json"),
                                ("gfx942:sramecc+:xnack-", "xml")):
                rep = os.path.join(d, f"run-{target.split(':')[0]}.{ext}")
                # A sanitizer build of the shim needs its runtime preloaded first (as `hipguard run` does).
                preload = (o.san_rt + ":" if o.san_rt else "") + o.shim
                env = dict(os.environ, LD_LIBRARY_PATH=o.simrt, HIPGUARD_SIM_GPUS=target, LD_PRELOAD=preload,
                           HIPGUARD_TARGET=target, HIPGUARD_REPORT=rep)
                if o.san_rt:
                    env["ASAN_OPTIONS"] = "detect_leaks=0:verify_asan_link_order=0"
                run([app], env)
                if not expect(os.path.exists(rep), f"shim wrote {rep}"):
                    continue
                text = open(rep).read()
                if ext == "json":
                    doc = self.json_report(f"shim report ({target})", json.loads(text), targets=[target])
                    expect("run" in doc and doc["run"]["mode"] == "warn", "shim report has its run section")
                    expect(doc["summary"]["targets"][0]["cannot_run" if "gfx942" in target else "can_run"] == 1,
                           f"shim report ({target}): the one fat binary's verdict")
                else:
                    root = ET.fromstring(text)
                    cases = root.findall("testsuite/testcase")
                    expect(len(cases) == 1 and cases[0].find("failure").get("type") == "HG201",
                           "shim JUnit report: one test case, failing with HG201")
            # Two processes under `hipguard run --report`: one merged document ("processes").
            rep = os.path.join(d, "job.json")
            target = "gfx942:sramecc+:xnack-"
            env = dict(os.environ, LD_LIBRARY_PATH=o.simrt, HIPGUARD_SIM_GPUS=target)
            run([o.cli, "run", "--target", target, "--report", rep, "--", "/bin/sh", "-c", f"'{app}'; '{app}'"], env)
            if expect(os.path.exists(rep), "hipguard run --report wrote the job's report"):
                doc = json.loads(open(rep).read())
                errors = list(self.validator.iter_errors(doc))
                for e in errors[:5]:
                    fail(f"merged report: schema: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
                expect(not errors, "merged report: valid against docs/report.schema.json")
                expect(len(doc.get("processes", [])) == 2 and doc["tool"]["name"] == "hipguard",
                       "merged report: two processes, the tool")


def main():
    ap = argparse.ArgumentParser()
    for a in ("cli", "shim", "simrt", "apps", "corpus", "schema", "docs", "san-rt"):
        ap.add_argument("--" + a, default="")
    o = ap.parse_args()
    f = Formats(o)
    app = lambda n: os.path.join(o.apps, n)
    if o.apps and os.path.exists(app("vector_add_multi")):
        d = f.check("vector_add_multi", ["gfx90a", "mi300x"], [app("vector_add_multi")], expect_status=1)
        expect(d["summary"]["targets"][0]["can_run"] == 1 and d["summary"]["targets"][1]["cannot_run"] == 1,
               "vector_add_multi runs on gfx90a, not on mi300x")
        f.check("apps, structural", [], [app("vector_add_multi"), app("arch_guarded"), app("big_lds_gfx90a.hipfb")],
                expect_status=0)
        d = f.check("big_lds", ["gfx90a", "gfx1030"], [app("big_lds_gfx90a"), app("vector_add_multi.hipfb")],
                    expect_status=1)
        f.inspect("arch_guarded", [app("arch_guarded"), app("vector_add_multi.hipfb")])
    else:
        print("SKIP hipcc-built programs: not built (tests/apps needs hipcc)")
    with tempfile.TemporaryDirectory() as empty:
        d = f.check("unusable paths", ["mi300x"], ["/nonexistent/x.co", "/bin/ls", empty], expect_status=1)
        expect(d["summary"]["file_errors"] == 3, "HG101, HG107 and HG110 are file errors")
    if o.corpus and os.path.isdir(o.corpus):
        # A directory of code objects is a kernel library: files for other processors are counted, not errors.
        d = f.check("corpus", ["gfx942", "mi355x"], [o.corpus], expect_status=0)
        expect([(t["can_run"], t["other_target"]) for t in d["summary"]["targets"]] == [(19, 23), (19, 23)],
               "19 of 42 corpus objects run on each, 23 are for other processors")
        d = f.check("corpus for gfx1100", ["gfx1100"], [o.corpus], expect_status=1)
        expect([t["code_objects"] for l in d["libraries"] for t in l["targets"]] == [0], "no gfx1100 file in the corpus")
        f.check("corpus, structural", [], [o.corpus], expect_status=0)
        f.inspect("corpus", [o.corpus])
    else:
        print(f"SKIP corpus: {o.corpus} not found")
    if os.path.exists(ROCSPARSE):
        d = f.check("rocSPARSE", ["gfx90a", "gfx942", "gfx1030"], [ROCSPARSE], expect_status=1)
        expect(d["summary"]["images"] == 111 and d["summary"]["targets"][0]["can_run"] == 111,
               "rocSPARSE: 111 fat binaries, all run on gfx90a")
    else:
        print(f"SKIP rocSPARSE: {ROCSPARSE} not installed (librocsparse0)")
    f.shim()
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
