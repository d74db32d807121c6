#!/usr/bin/env python3
"""hipguard on real ROCm 7.2 (what MI355X machines run): hipcc 7.2.4 programs, the 7.2 libraries
(rocBLAS 5 with gfx942 code, hipBLASLt, rocSPARSE, rocSOLVER, MIOpen, RCCL), rocBLAS's own programs,
and the shim under the real HIP 7.2 runtime (libamdhip64.so.7) of the ROCm 7.2 root.

rocm72_test.py CASE --root R --apps DIR --cli hipguard --shim libhipguard.so --source SRC --build BUILD
Exit 0 passed, 1 failed, 77 skipped (one line says why: no ROCm 7.2 root, apps not built).
The helpers are rocm_test.py's; its in_root runs in the 7.2 root here.
"""
import argparse
import glob
import os
import re
import sys

import rocm_test as R
from rocm_test import app, cli_json, diagnostics, expect, images, in_root, run

LIB = "usr/lib/x86_64-linux-gnu"


def lib(*parts):
    return os.path.join(R.A.root, LIB, *parts)


def rocblas_library():
    """rocBLAS 5's Tensile directory (rocblas/<version>/library)."""
    found = sorted(glob.glob(lib("rocblas", "*", "library")))
    if not expect(len(found) == 1, f"rocBLAS library/ directories in the 7.2 root: {found}"):
        R.skip("no rocBLAS library directory")
    return found[0]


def errors_and_warnings(doc):
    return [d for d in diagnostics(doc) if d["severity"] != "note"]


# ---- hipcc 7.2.4 programs --------------------------------------------------------------------------

def case_Hipcc72Programs():
    """What hipcc 7.2.4 (clang 22) emits, selected as the runtime does, with nothing to say on
    unmodified compiler output: specific and generic targets, compressed bundles, code object v6, -fgpu-rdc."""
    R.check_selection("saxpy_specific", R.SPECIFIC, "offload bundle")
    R.check_selection("saxpy_compressed", R.SPECIFIC, "compressed offload bundle")
    R.check_selection("saxpy_generic", R.GENERIC, "offload bundle")
    R.check_selection("saxpy_rdc", {"gfx942": "gfx942", "gfx90a:xnack-": "gfx90a", "gfx950": None}, "offload bundle")
    R.check_selection("saxpy_v6", {"gfx942": "gfx942", "gfx950": "gfx950", "gfx90a": None}, "offload bundle")
    _, doc = cli_json("inspect", app("saxpy_v6"))
    versions = {co["code_object_version"] for img in images(doc) for co in img["code_objects"]}
    expect(versions == {6}, f"saxpy_v6: code object versions {versions}, want {{6}}")
    _, doc = cli_json("inspect", app("saxpy_specific"))
    versions = {co["code_object_version"] for img in images(doc) for co in img["code_objects"]}
    print(f"hipcc 7.2.4 default code object version: {versions}")
    _, doc = cli_json("inspect", app("saxpy_compressed"))
    img = images(doc)[0]
    expect(img.get("compression") == "zstd", f"saxpy_compressed: compression {img.get('compression')}")
    # Registers and LDS as the 7.2 compiler allocates them: no HG303/HG404 on its output.
    for name in ("lds_heavy", "mfma"):
        for target in ("gfx950", "gfx942", "gfx90a"):
            rc, doc = cli_json("check", "--sysroot", R.A.root, "--target", target, app(name))
            found = [d["code"] for d in errors_and_warnings(doc)]
            expect(rc == 0 and not found, f"{name} on {target}: exit {rc}, findings {found}")
    print("hipcc 7.2.4: saxpy (5 builds), lds_heavy and mfma checked")


# ---- the shim under the real HIP 7.2 runtime ---------------------------------------------------------

# ---- hipguard's own code objects (tests/rocm/apps/lds_limits.hip) ----------------------------------

# Static LDS at each processor's limit: what each object declares and the processor's limit (bytes).
OWN = {  # file: (code object version, processor in the ELF header, static LDS of lds_at_limit)
    "gfx942_lds_at_limit_v4.co": (4, "gfx942", 65536),
    "gfx942_lds_at_limit_v5.co": (5, "gfx942", 65536),
    "gfx950_lds_at_limit_v6.co": (6, "gfx950", 163840),
    "gfx1250_lds_at_limit.co": (6, "gfx1250", 327680),
    "gfx9-4-generic_lds_at_limit.co": (6, "gfx9-4-generic", 65536),
}
LIMIT = {"mi300x": 65536, "mi355x": 163840, "gfx1250": 327680, "gfx90a": 65536}
# The error codes each file gets on each target: HG202 for a code object of another processor (a
# generic one runs on the processors it covers), HG301 where its static LDS is over the target's limit,
# HG201 for a bundle without an entry for the target; nothing at all where it runs.
OWN_VERDICTS = {
    "gfx942_lds_at_limit_v4.co": {"mi300x": set(), "mi355x": {"HG202"}, "gfx1250": {"HG202"}, "gfx90a": {"HG202"}},
    "gfx942_lds_at_limit_v5.co": {"mi300x": set(), "mi355x": {"HG202"}, "gfx1250": {"HG202"}, "gfx90a": {"HG202"}},
    "gfx950_lds_at_limit_v6.co": {"mi300x": {"HG202", "HG301"}, "mi355x": set(), "gfx1250": {"HG202"},
                                  "gfx90a": {"HG202", "HG301"}},
    "gfx1250_lds_at_limit.co": {"mi300x": {"HG202", "HG301"}, "mi355x": {"HG202", "HG301"}, "gfx1250": set(),
                                "gfx90a": {"HG202", "HG301"}},
    "gfx9-4-generic_lds_at_limit.co": {"mi300x": set(), "mi355x": set(), "gfx1250": {"HG202"}, "gfx90a": {"HG202"}},
    "lds_at_limit_compressed.hipfb": {"mi300x": set(), "mi355x": set(), "gfx1250": set(), "gfx90a": {"HG201"}},
}


def case_OwnCodeObjects():
    """hipguard's own real code objects, made by hipcc 7.2.4 from tests/rocm/apps/lds_limits.hip (what a
    clone checks without the AITER corpus): static LDS at each processor's limit (64, 160, 320 KiB), code
    object v4, v5, v6 and generic, a compressed bundle with gfx942, gfx950 and gfx1250 entries. Each
    passes with nothing said on the processors it is built for, and elsewhere gets exactly its errors."""
    for name, (version, processor, lds) in OWN.items():
        _, doc = cli_json("inspect", app(name))
        cos = [co for img in images(doc) for co in img["code_objects"]]
        expect(len(cos) == 1 and cos[0]["code_object_version"] == version and cos[0]["target"].startswith(processor),
               f"{name}: {[(co['target'], co['code_object_version']) for co in cos]}, want {processor} v{version}")
        kernels = {k["name"]: k for co in cos for k in co["kernels"]}
        got = kernels.get("_Z12lds_at_limitPfPKf", {}).get("group_segment_fixed_size")
        expect(got == lds, f"{name}: lds_at_limit declares {got} bytes of static LDS, want {lds}")
    _, doc = cli_json("inspect", app("lds_at_limit_compressed.hipfb"))
    img = images(doc)[0]
    expect(img.get("compression") == "zstd", f"lds_at_limit_compressed.hipfb: compression {img.get('compression')}")
    for name, verdicts in OWN_VERDICTS.items():
        for target, want in verdicts.items():
            rc, doc = cli_json("check", "--target", target, app(name))
            said = errors_and_warnings(doc)
            codes = {d["code"] for d in said}
            expect(codes == want and rc == (1 if want else 0),
                   f"{name} on {target}: exit {rc}, {sorted(codes)}, want {sorted(want)}: "
                   + "; ".join(d["message"][:160] for d in said))
            for d in said:
                if d["code"] != "HG301":
                    continue
                lds = OWN[name][2]
                expect(f"declares {lds} bytes" in d["message"]
                       and f"provides at most {LIMIT[target]} bytes" in d["message"],
                       f"{name} on {target}: HG301 says '{d['message']}', want {lds} over {LIMIT[target]}")
    print(f"own code objects: {len(OWN) + 1} files x {len(LIMIT)} targets as expected")


def shim_env(*extra):
    return [f"LD_PRELOAD={R.A.shim}", *extra]


def case_ShimOnHip72():
    """The shim preloaded into hipcc 7.2.4 programs with libamdhip64.so.7: warn mode changes nothing,
    strict mode stops a program without code for the GPU before main, runs one that has it, and
    takes the runtime's version (HIP 7.x selection) from the library it finds."""
    exe = app("saxpy_specific")
    base = in_root(exe)
    expect(base.returncode == 0 and "saxpy: launch" in base.stdout,
           f"without the shim: exit {base.returncode}, {base.stdout!r} {base.stderr[-300:]!r}")
    for target in ("mi300x", "mi355x"):
        warn = in_root(exe, env=shim_env(f"HIPGUARD_TARGET={target}"))
        expect(warn.returncode == base.returncode and warn.stdout == base.stdout,
               f"warn on {target}: exit {warn.returncode}, stdout {warn.stdout!r}; without {base.stdout!r}")
        expect(not re.search(r"\b(error|warning) HG\d+", warn.stderr), f"warn on {target}: {warn.stderr[-400:]}")
        ok = in_root(exe, env=shim_env(f"HIPGUARD_TARGET={target}", "HIPGUARD_MODE=strict"))
        expect(ok.returncode == base.returncode and ok.stdout == base.stdout,
               f"strict on {target}: exit {ok.returncode}, stdout {ok.stdout!r}: {ok.stderr[-400:]}")
    strict = in_root(exe, env=shim_env("HIPGUARD_TARGET=gfx908", "HIPGUARD_MODE=strict"))
    errors = [l for l in strict.stderr.splitlines() if re.search(r"\berror HG\d+", l)]
    expect(strict.returncode == 86, f"strict on gfx908: exit {strict.returncode}, want 86: {strict.stderr[-400:]}")
    expect(len(errors) == 1 and "HG201" in errors[0], f"strict on gfx908: error lines {errors}")
    expect("saxpy: launch" not in strict.stdout, "strict on gfx908: main ran")
    # A compressed bundle and a code object v6 program, the same way.
    for name in ("saxpy_compressed", "saxpy_v6"):
        p = in_root(app(name), env=shim_env("HIPGUARD_TARGET=mi355x", "HIPGUARD_MODE=strict"))
        expect(p.returncode == 0 and not re.search(r"\berror HG\d+", p.stderr), f"{name} strict on mi355x: "
               f"exit {p.returncode}: {p.stderr[-400:]}")
    # A compressed bundle is decoded at its first use, as HIP 7.2 decodes it: main runs, the launch is
    # refused with the runtime's error and HG201 said there, once; the exit status says so (86).
    packed = in_root(app("saxpy_compressed"), env=shim_env("HIPGUARD_TARGET=gfx908", "HIPGUARD_MODE=strict"))
    errors = [l for l in packed.stderr.splitlines() if re.search(r"\berror HG(?!602)\d+", l)]
    expect(packed.returncode == 86 and "error HG602" in packed.stderr,
           f"saxpy_compressed strict on gfx908: exit {packed.returncode}: {packed.stderr[-400:]}")
    expect(len(errors) == 1 and "HG201" in errors[0], f"saxpy_compressed strict on gfx908: error lines {errors}")
    expect("saxpy: launch 98 (hipErrorInvalidDeviceFunction)" in packed.stdout,
           f"saxpy_compressed strict on gfx908: the launch was not refused at first use: {packed.stdout!r}")
    warn = in_root(app("saxpy_compressed"), env=shim_env("HIPGUARD_TARGET=gfx908"))
    unchanged = in_root(app("saxpy_compressed"))
    expect(warn.returncode == unchanged.returncode and warn.stdout == unchanged.stdout
           and len(re.findall(r"\berror HG201", warn.stderr)) == 1,
           f"saxpy_compressed warn on gfx908: exit {warn.returncode}, {warn.stdout!r}: {warn.stderr[-400:]}")
    # HIP 7.x asks for the generic code object with the GPU's features (CLR TargetToGeneric): a
    # gfx906 GPU (sramecc) cannot use gfx9-generic, which HIP 6.4 would give it.
    gen = app("saxpy_gfx9_generic")
    base = in_root(gen)
    strict = in_root(gen, env=shim_env("HIPGUARD_TARGET=mi50", "HIPGUARD_MODE=strict", "HIPGUARD_LOG_LEVEL=debug"))
    expect("as HIP 7" in strict.stderr, f"the shim did not take HIP 7.x from libamdhip64.so.7: {strict.stderr[-600:]}")
    expect(strict.returncode == 86 and "HG213" in strict.stderr,
           f"saxpy_gfx9_generic strict on mi50 under HIP 7.2: exit {strict.returncode}: {strict.stderr[-400:]}")
    ok = in_root(gen, env=shim_env("HIPGUARD_TARGET=gfx900:xnack-", "HIPGUARD_MODE=strict"))
    expect(ok.returncode == base.returncode and ok.stdout == base.stdout,
           f"saxpy_gfx9_generic strict on gfx900 under HIP 7.2: exit {ok.returncode}: {ok.stderr[-400:]}")
    print("shim with libamdhip64.so.7: warn unchanged, strict runs on mi300x/mi355x, stops gfx908 (86), "
          "a compressed bundle judged at first use, gfx9-generic as HIP 7.x")


def case_ApiPathsOnHip72():
    """Every load, lookup and launch path of HIP 7.2 that the shim interposes (tests/apps/api_paths.hip,
    built by hipcc 7.2.4), forwarded to the real libamdhip64.so.7, which answers each with 100 (no
    device): warn mode returns what the runtime returns and says only that static + dynamic LDS is over
    MI300X's limit (HG306); strict mode on MI355X refuses the gfx942-only module at each of the three 7.x loads
    (hipModuleLoadFatBinary, hipLibraryLoadData, hipLibraryLoadFromFile) with the runtime's own error
    (209, hipErrorNoBinaryForGpu) and changes nothing else."""
    exe, module = app("api_paths"), app("dyn_lds_gfx942.hipfb")
    cmd = [exe, module, "20000"]  # 48 KiB static + 20000 bytes dynamic: over 64 KiB, within 160 KiB
    base = in_root(*cmd)
    lines = base.stdout.splitlines()
    expect(base.returncode == 0 and "api_paths: done" in lines and len(lines) > 15,
           f"without the shim: exit {base.returncode}: {base.stdout[-400:]!r} {base.stderr[-300:]!r}")
    results = {l.split(": ")[0]: l.split(": ")[1] for l in lines if l.startswith("hip") and ": " in l}
    expect(set(v.split(" ")[0] for v in results.values()) == {"100"},
           f"the real HIP 7.2 runtime without a GPU answers each call with 100: {results}")
    warn = in_root(*cmd, env=shim_env("HIPGUARD_TARGET=mi300x"))
    expect(warn.returncode == 0 and warn.stdout == base.stdout,
           f"warn on mi300x: exit {warn.returncode}, output differs: {warn.stdout[-400:]!r}")
    codes = sorted({m for m in re.findall(r"\b(?:error|warning) (HG\d+)", warn.stderr)})
    expect(codes == ["HG306"], f"warn on mi300x: codes {codes}: {warn.stderr[-600:]}")
    strict = in_root(*cmd, env=shim_env("HIPGUARD_TARGET=mi355x", "HIPGUARD_MODE=strict"))
    loads = ("hipModuleLoadFatBinary", "hipLibraryLoadData", "hipLibraryLoadFromFile")
    want = "\n".join(f"{l.split(': ')[0]}: 209" if l.split(": ")[0] in loads else l for l in lines) + "\n"
    expect(strict.stdout == want, f"strict on mi355x: output {strict.stdout!r}, want {want!r}")
    hg201 = [l for l in strict.stderr.splitlines() if "error HG201" in l]
    expect(len(hg201) == 3 and all("nearest: gfx942" in l for l in hg201),
           f"strict on mi355x: HG201 lines {hg201}")
    expect(strict.returncode == 86, f"strict on mi355x: exit {strict.returncode}, want 86")
    print(f"api_paths on libamdhip64.so.7: {len(results)} calls; warn unchanged (HG306); strict refuses 3 loads (209)")


# ---- the 7.2 libraries --------------------------------------------------------------------------------

def case_KernelLibraries72():
    """rocBLAS 5 on MI300X passes with nothing to say; on MI355X (no gfx950 code in Debian's build) it
    is one finding that names gfx942 as the nearest processor; hipBLASLt 7.2 (no gfx942) is one HG214
    on MI300X; each runs clean on a processor it ships."""
    rocblas = rocblas_library()
    files = sorted(os.listdir(rocblas))
    rc, doc = cli_json("check", "--target", "mi300x", rocblas)
    found = errors_and_warnings(doc)
    libs = doc.get("libraries", [])
    t = libs[0]["targets"][0] if libs else {}
    # rocBLAS 4's rule: librocblas.so.5 carries the same "*co" glob and "-xnack+"/"-xnack-" names
    want = len(R.rocblas_loads(files, "gfx942", "xnack-"))
    expect(rc == 0 and not found, f"rocBLAS 5 on mi300x: exit {rc}, findings {[d['code'] for d in found][:5]}")
    expect(want > 0 and t.get("code_objects") == want,
           f"rocBLAS 5 on mi300x: {t.get('code_objects')} files checked, rocBLAS's loader opens {want}")
    print(f"rocBLAS 5 mi300x: {t.get('code_objects')} files, {t.get('kernels')} kernels, exit {rc}")
    p = run([R.A.cli, "check", "--target", "mi355x", rocblas])
    lines = [l for l in p.stdout.splitlines() if re.match(r"(error|warning) HG", l)]
    expect(p.returncode == 1 and len(lines) == 1, f"rocBLAS 5 on mi355x: exit {p.returncode}, lines {lines[:3]}")
    expect(bool(lines) and "HG214" in lines[0] and "nearest: gfx942" in lines[0],
           f"rocBLAS 5 on mi355x: does not name gfx942 as the nearest: {lines[:1]}")
    print(f"rocBLAS 5 mi355x: {lines[:1]}")
    hipblaslt = lib("hipblaslt", "library")
    p = run([R.A.cli, "check", "--target", "mi300x", hipblaslt])
    lines = [l for l in p.stdout.splitlines() if re.match(r"(error|warning) HG", l)]
    expect(p.returncode == 1 and len(lines) == 1 and lines[0].startswith("error HG214"),
           f"hipBLASLt 7.2 on mi300x: exit {p.returncode}, lines {lines[:3]}")
    print(f"hipBLASLt 7.2 mi300x: {lines[:1]}")
    for target in ("gfx90a", "gfx1100", "gfx1201"):
        for name, d in (("rocBLAS 5", rocblas), ("hipBLASLt 7.2", hipblaslt)):
            rc, doc = cli_json("check", "--target", target, d)
            found = sorted({x["code"] for x in errors_and_warnings(doc)})
            expect(rc == 0 and not found, f"{name} on {target}: exit {rc}, findings {found}")
    print("rocBLAS 5 and hipBLASLt 7.2 on gfx90a, gfx1100, gfx1201: nothing to say")
    # Without --target, the other direction: which GPUs each library runs on, as the targeted checks
    # say it (rocBLAS 5: not MI355X, naming gfx942; hipBLASLt 7.2: not MI300X), row by row.
    for name, d, runs, not_on in (("rocBLAS 5", rocblas, ("gfx942", "gfx90a", "gfx1100", "gfx1201"), "gfx950"),
                                  ("hipBLASLt 7.2", hipblaslt, ("gfx90a", "gfx1100", "gfx1201"), "gfx942")):
        p = run([R.A.cli, "check", d])
        rows = {m.group(2).split(":")[0]: (m.group(1), m.group(3)) for m in
                re.finditer(r"^  (runs|does not run) +(\S+) +\S.*?(error HG\d+.*)?$", p.stdout, re.M)}
        expect(p.returncode == 0, f"{name} without --target: exit {p.returncode} (the structural check's)")
        for proc in runs:
            expect(rows.get(proc, ("",))[0] == "runs", f"{name} without --target: {proc} row {rows.get(proc)}")
        row = rows.get(not_on, ("", ""))
        expect(row[0] == "does not run" and (row[1] or "").startswith("error HG214"),
               f"{name} without --target: {not_on} row {row}")
        if name == "rocBLAS 5":
            expect("nearest: gfx942" in (row[1] or ""), f"rocBLAS 5 on gfx950: {row}")
        print(f"{name} without --target: runs on {sorted(p for p, r in rows.items() if r[0] == 'runs')}")
        # Each row (one check over every target at once) says what the check for its target alone says.
        _, whole = cli_json("check", d)
        for row in whole["support"]:
            rc, one = cli_json("check", "--target", row["target"], d)
            codes = {x["code"] for x in diagnostics(one) if x["severity"] == "error"}
            expect(row["runs"] == (rc == 0) and (row["runs"] or row.get("code") in codes),
                   f"{name}, which GPUs: {row['target']} runs {row['runs']} ({row.get('code')}); "
                   f"its own check: exit {rc}, errors {sorted(codes)}")


# Fat binaries of the 7.2 stack, each checked on the processors it ships code for.
LIBRARIES = ["librocsparse.so.1", "librocsolver.so.0", "librccl.so.1", "libMIOpen.so.1", "librocblas.so.5",
             "libhipblaslt.so.1"]
PREFERRED = ("gfx942", "gfx950", "gfx90a", "gfx908", "gfx1100", "gfx1151", "gfx1201")


def case_RealLibraries72():
    """No HG3xx/HG404/HG407 (nothing above a note) on any 7.2 library on a processor it ships code for."""
    R.check_libraries(LIBRARIES, PREFERRED, 6)


def case_RocblasPrograms72():
    """rocBLAS 5's own programs checked with what they load, each library found where 7.2's packages put
    it (--sysroot): on MI300X nothing to say; on MI355X the missing gfx950 code, said per library."""
    progs = [p for p in ("/usr/bin/rocblas-bench", "/usr/bin/rocblas-test",
                         "/usr/libexec/rocm/librocblas5-bench/rocblas-bench",
                         "/usr/libexec/rocm/librocblas5-tests/rocblas-test") if os.path.exists(R.A.root + p)]
    if not expect(progs, "no rocblas-bench / rocblas-test in the 7.2 root"):
        return
    for prog in progs:
        rc, doc = cli_json("check", "--sysroot", R.A.root, "--target", "mi300x", R.A.root + prog)
        found = errors_and_warnings(doc)
        names = sorted({os.path.basename(f["path"]) for f in doc["files"]})
        expect(rc == 0 and not found, f"{prog} on mi300x: exit {rc}, findings "
               f"{[(d['code'], d.get('message', '')[:120]) for d in found][:4]}")
        expect(any(n.startswith("librocblas.so.5") for n in names), f"{prog}: librocblas.so.5 not followed: {names[:8]}")
        expect(any("/library/" in f["path"] for f in doc["files"]), f"{prog}: rocBLAS's Tensile library not checked")
        print(f"{prog} mi300x: {len(doc['files'])} files, exit {rc}")
        rc, doc = cli_json("check", "--sysroot", R.A.root, "--target", "mi355x", R.A.root + prog)
        errs = [d for d in diagnostics(doc) if d["severity"] == "error"]
        expect(rc == 1 and errs, f"{prog} on mi355x: exit {rc}, errors {[d['code'] for d in errs]}")
        print(f"{prog} mi355x: exit {rc}, errors {sorted({d['code'] for d in errs})}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    for a in ("root", "apps", "cli", "shim", "source", "build"):
        ap.add_argument("--" + a, required=True)
    R.A = ap.parse_args()
    R.STACK = "7.2"
    if not os.path.exists(os.path.join(R.A.root, ".hipguard-root")):
        R.skip(f"no ROCm 7.2 root at {R.A.root} (scripts/rocm-root.sh --stack 7.2 builds it; needs root and "
               "Debian's archive)")
    globals()["case_" + R.A.case]()
    print(f"Rocm72.{R.A.case}: {'FAILED, ' + str(len(R.failures)) + ' failures' if R.failures else 'passed'}")
    sys.exit(1 if R.failures else 0)


if __name__ == "__main__":
    main()
