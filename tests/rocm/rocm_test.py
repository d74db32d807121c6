#!/usr/bin/env python3
"""hipguard on real ROCm 6.4/7.x: hipcc 7 programs, the root's libraries, the real HIP 6.4 runtime.

rocm_test.py CASE --root R --apps DIR --cli hipguard --shim libhipguard.so --source SRC --build BUILD
Exit 0 passed, 1 failed, 77 skipped (one line says why: no ROCm root, apps not built).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

A = None  # the parsed arguments
STACK = "6.4"  # which root in_root runs in (scripts/rocm-root.sh --stack); rocm72_test.py sets "7.2"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond


def skip(why):
    print("SKIPPED: " + why)
    sys.exit(77)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)


def cli_json(*args):
    """hipguard ARGS --json: (exit status, document)."""
    p = run([A.cli, *args, "--json"])
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        fail(f"hipguard {' '.join(args)} --json wrote no JSON (exit {p.returncode}): {p.stderr[-400:]}")
        return p.returncode, {"files": []}


def images(doc):
    return [img for f in doc["files"] for img in f["images"]]


def diagnostics(doc):
    out = [d for f in doc["files"] for d in f["diagnostics"]]
    return out + [d for img in images(doc) for d in img["diagnostics"]]


def in_root(*cmd, env=(), binds=()):
    """COMMAND inside the ROCm root, the source and build trees bound at their own paths."""
    b = []
    for d in (A.source, A.build, *binds):
        b += ["--bind", d]
    e = []
    for kv in env:
        e += ["--env", kv]
    return run([os.path.join(A.source, "scripts/in-rocm-root.sh"), "--stack", STACK, *b, *e, "--", *cmd])


def app(name):
    path = os.path.join(A.apps, name)
    if not os.path.exists(path):
        skip(f"{path} was not built (the ROCm root appeared after cmake ran: re-run scripts/build.sh)")
    return path


# ---- hipcc 7 programs ----------------------------------------------------------------------------

# What each program was built for (tests/rocm/CMakeLists.txt) and, per target, the bundle entry the
# runtime must select: the processor's own entry (xnack as the target asks), else its generic one.
SPECIFIC = {
    "gfx942": "gfx942", "mi300x": "gfx942", "gfx950": "gfx950", "mi355x": "gfx950",
    "gfx1200": "gfx1200", "gfx1201": "gfx1201",
    "gfx90a:xnack-": "gfx90a:xnack-", "gfx90a:xnack+": "gfx90a:xnack+", "mi250x": "gfx90a:xnack-",
    "gfx908": None, "gfx1100": None,
}
GENERIC = {
    "gfx942": "gfx942", "gfx950": "gfx9-4-generic", "gfx1030": "gfx10-3-generic",
    "gfx1100": "gfx11-generic", "gfx1151": "gfx11-generic", "gfx1201": "gfx12-generic", "gfx908": None,
}


def selected_processor(verdict):
    """'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-' -> 'gfx90a:xnack-'."""
    sel = verdict.get("selected") or ""
    return sel.split("--", 1)[1] if "--" in sel else None


def check_selection(name, table, kind):
    path = app(name)
    for target, want in table.items():
        rc, doc = cli_json("check", "--sysroot", A.root, "--target", target, path)  # libamdhip64.so.6 in the root
        fatbins = images(doc)
        if not expect(len(fatbins) == 1, f"{name}: {len(fatbins)} fat binaries, want 1"):
            continue
        img = fatbins[0]
        expect(img["kind"] == kind, f"{name}: kind {img['kind']}, want {kind}")
        for v in img["verdicts"]:
            got = selected_processor(v) if v["can_run"] else None
            expect(got == want, f"{name} on {v['target']}: selected {got}, want {want}")
        expect(rc == (0 if want else 1), f"{name} on {target}: exit {rc}")
        noisy = [d for d in diagnostics(doc) if want and d["severity"] != "note"]
        expect(not noisy, f"{name} on {target}: findings on unmodified hipcc 7 output: {noisy[:3]}")
    print(f"{name}: {len(table)} targets checked")


def case_Hipcc7Programs():
    check_selection("saxpy_specific", SPECIFIC, "offload bundle")
    check_selection("saxpy_compressed", SPECIFIC, "compressed offload bundle")
    check_selection("saxpy_generic", GENERIC, "offload bundle")
    check_selection("saxpy_rdc", {"gfx942": "gfx942", "gfx90a:xnack-": "gfx90a", "gfx950": None}, "offload bundle")
    check_selection("saxpy_v6", {"gfx942": "gfx942", "gfx950": "gfx950", "gfx90a": None}, "offload bundle")
    _, doc = cli_json("inspect", app("saxpy_v6"))
    versions = {co["code_object_version"] for img in images(doc) for co in img["code_objects"]}
    expect(versions == {6}, f"saxpy_v6: code object versions {versions}, want {{6}}")
    _, doc = cli_json("inspect", app("saxpy_compressed"))
    img = images(doc)[0]
    expect(img.get("compression") == "zstd", f"saxpy_compressed: compression {img.get('compression')}")


# ---- register allocation (HG404) -----------------------------------------------------------------

def vgpr_granule(processor, wave32):
    if processor in ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"):
        return 8
    if processor.startswith("gfx125"):
        return 16 if wave32 else 8
    if int(re.match(r"gfx(\d+)", processor).group(1)) >= 1000 and wave32:
        return 8
    return 4


def case_RegisterAllocation():
    raised = 0
    for name in ("lds_heavy", "mfma"):
        path = app(name)
        _, doc = cli_json("inspect", path)
        for co in (co for img in images(doc) for co in img["code_objects"]):
            proc = co["target"].split(":")[0].split(" ")[0]
            for k in co["kernels"]:
                d = k["descriptor"]
                wave32 = bool(d["kernel_code_properties"] & (1 << 10))
                allocated = ((d["compute_pgm_rsrc1"] & 0x3F) + 1) * vgpr_granule(proc, wave32)
                print(f"{name} {proc}: .vgpr_count {k['vgpr_count']}, .agpr_count {k.get('agpr_count')}, "
                      f"allocated {allocated}, wave{32 if wave32 else 64}, LDS {k['group_segment_fixed_size']}")
                # Beyond rounding .vgpr_count up to a granule: what LDS-limited occupancy makes LLVM allocate.
                g = vgpr_granule(proc, wave32)
                raised += allocated > -(-max(k["vgpr_count"], 1) // g) * g
        for target in ("gfx942", "gfx90a", "gfx1100"):
            rc, doc = cli_json("check", "--target", target, path)
            found = [d for d in diagnostics(doc) if d["code"] in ("HG303", "HG404")]
            expect(not found, f"{name} on {target}: register findings on hipcc 7 output: {found[:3]}")
            expect(rc == 0, f"{name} on {target}: exit {rc}")
    # The case the rule exists for must be in the inputs, or this test proves nothing.
    expect(raised > 0, "no kernel whose descriptor allocates more VGPRs than .vgpr_count rounded to a granule")
    print(f"kernels allocating more VGPRs than they use, beyond rounding: {raised}")


# ---- Tensile code objects: one metadata note per kernel -------------------------------------------

def tensile_sample():
    lib = os.path.join(A.root, "usr/lib/x86_64-linux-gnu")
    out = []
    for d, exts, n in ((f"{lib}/rocblas/4.4.1/library", (".co", ".hsaco"), 3), (f"{lib}/hipblaslt/library", (".co",), 2)):
        if not os.path.isdir(d):
            fail(f"{d} is missing from the ROCm root")
            continue
        for ext in exts:
            files = sorted(f for f in os.listdir(d) if f.endswith(ext))
            step = max(1, len(files) // n)
            out += [os.path.join(d, f) for f in files[::step][:n]]
    return out


def readelf_symbols(path):
    """Kernel descriptor symbols named by the metadata notes, per the root's llvm-readelf --notes (LLVM 21
    knows gfx1200/gfx1201, which LLVM 16 does not print notes for)."""
    if path.startswith(A.root + "/"):
        p = in_root("/usr/lib/llvm-21/bin/llvm-readelf", "--notes", "/" + os.path.relpath(path, A.root))
    else:
        p = in_root("/usr/lib/llvm-21/bin/llvm-readelf", "--notes", path, binds=[os.path.dirname(path)])
    return re.findall(r"^\s+\.symbol:\s+'?([^'\n]+)'?$", p.stdout, re.M), p.stdout.count("NT_AMDGPU_METADATA")


def unbundled(path, entry, tmp):
    """The code object of bundle entry ENTRY of PATH (hipBLASLt's gfx12 files are compressed
    bundles), unbundled by the root's clang-offload-bundler into TMP."""
    out = os.path.join(tmp, os.path.basename(path) + ".elf")
    p = in_root("/usr/lib/llvm-21/bin/clang-offload-bundler", "--unbundle", "--type=o",
                "--input=/" + os.path.relpath(path, A.root), f"--targets={entry}", f"--output={out}", binds=[tmp])
    expect(p.returncode == 0, f"clang-offload-bundler on {path}: {p.stderr[-300:]}")
    return out


def case_TensileNotes():
    total_notes = total_kernels = bundles = 0
    with tempfile.TemporaryDirectory(dir=A.build) as tmp:
        for path in tensile_sample():
            n_notes, n_kernels, bundled = tensile_file(path, tmp)
            total_notes, total_kernels, bundles = total_notes + n_notes, total_kernels + n_kernels, bundles + bundled
    expect(total_notes > 100, f"only {total_notes} metadata notes in the sample: not Tensile's layout")
    print(f"Tensile sample: {total_kernels} kernels in {total_notes} notes ({bundles} files compressed bundles)")


def tensile_file(path, tmp):
    """One Tensile file: hipguard's kernels against llvm-readelf's notes. (notes, kernels, bundled)."""
    name = os.path.basename(path)
    _, doc = cli_json("inspect", path)
    cos = [co for img in images(doc) for co in img["code_objects"]]
    if not expect(len(cos) == 1, f"{name}: {len(cos)} code objects"):
        return 0, 0, 0
    co = cos[0]
    elf = unbundled(path, co["entry"], tmp) if co["entry"] else path
    symbols, notes = readelf_symbols(elf)
    got = sorted(k["symbol"] for k in co["kernels"])
    expect(got == sorted(symbols), f"{name}: hipguard lists {len(got)} kernels, llvm-readelf's notes {len(symbols)}")
    expect(not co["kernels_without_metadata"], f"{name}: {len(co['kernels_without_metadata'])} kernels without metadata")
    proc = co["target"].split(" ")[0]
    rc, doc = cli_json("check", "--target", proc, path)
    noisy = [d for d in diagnostics(doc) if d["severity"] != "note"]
    expect(rc == 0 and not noisy, f"{name} on {proc}: exit {rc}, {noisy[:3]}")
    return notes, len(got), int(bool(co["entry"]))


# ---- whole real libraries --------------------------------------------------------------------------

LIBRARIES = ["librocsparse.so.1", "librocsolver.so.0", "librocblas.so.4", "libmagma.so.2",
             "ggml/backends0/libggml-hip.so"]
# The processors checked where a library has them: the Instinct ones first (unified VGPR/AGPR
# file, MFMA), then one of each RDNA generation (wave32).
PREFERRED = ("gfx90a", "gfx908", "gfx942", "gfx906", "gfx1100", "gfx1030", "gfx1201")


def check_libraries(libraries, preferred, most):
    """Each library (a file of the root's libdir) checked with what it loads on up to `most` of the
    processors it ships code for, in `preferred` order: nothing above a note, exit 0."""
    lib = os.path.join(A.root, "usr/lib/x86_64-linux-gnu")
    for name in libraries:
        path = os.path.join(lib, name)
        if not expect(os.path.exists(path), f"{path} is missing from the ROCm root"):
            continue
        _, doc = cli_json("inspect", path)
        procs = sorted({co["target"].split(" ")[0] for img in images(doc) for co in img["code_objects"]})
        targets = [p for want in preferred for p in procs if p.split(":")[0] == want][:most]
        if not targets:
            print(f"{name}: {len(images(doc))} fat binaries, no code object (processors {procs})")
            continue
        args = [a for t in targets for a in ("--target", t)]
        rc, doc = cli_json("check", "--sysroot", A.root, *args, path)  # its libraries found in the root
        by_code = {}
        for d in diagnostics(doc):
            if d["severity"] != "note":
                by_code[d["code"]] = by_code.get(d["code"], 0) + 1
        s = doc.get("summary", {})
        print(f"{name}: {len(images(doc))} fat binaries, {s.get('kernels')} kernels, targets {targets}, "
              f"findings {by_code or 'none'}")
        expect(not by_code, f"{name} runs on {targets}, yet hipguard finds {by_code}")
        expect(rc == 0, f"{name}: exit {rc}")


def case_RealLibraries():
    check_libraries(LIBRARIES, PREFERRED, 5)


# ---- kernel libraries: a directory is one library, checked per target -----------------------------

def rocblas_loads(files, processor, xnack):
    """The files rocBLAS 6.4 loads for a GPU (library/src/tensile_host.cpp, TensileHost::initialize):
    glob("<dir>/*<processor>*co"), skipping names that contain the other xnack mode."""
    skip_xnack = {"xnack+": "xnack-", "xnack-": "xnack+"}.get(xnack)
    return [f for f in files if processor in f and f.endswith("co") and not (skip_xnack and skip_xnack in f)]


def case_KernelLibraries():
    """rocBLAS's and hipBLASLt's library/ directories as libraries: for each target hipguard checks
    exactly the files rocBLAS's own loader opens, finds nothing wrong where the library has code, and
    says once (HG214) where it has none: 694 HG202 and 77 HG203 before, for a library that runs."""
    lib = os.path.join(A.root, "usr/lib/x86_64-linux-gnu")
    rocblas = os.path.join(lib, "rocblas/4.4.1/library")
    files = sorted(os.listdir(rocblas))
    cases = [("gfx90a:xnack-", "gfx90a", "xnack-"), ("gfx90a:xnack+", "gfx90a", "xnack+"),
             ("gfx908:xnack-", "gfx908", "xnack-"), ("gfx1100", "gfx1100", None), ("gfx942", "gfx942", "xnack-")]
    rc, doc = cli_json("check", *[a for t, _, _ in cases for a in ("--target", t)], rocblas)
    libs = doc.get("libraries", [])
    if not expect(len(libs) == 1, f"rocBLAS library/ is one library, got {[l['name'] for l in libs]}"):
        return
    errors = [d for d in diagnostics(doc) if d["severity"] == "error"]
    for i, (target, processor, xnack) in enumerate(cases):
        t = libs[0]["targets"][i]
        want = len(rocblas_loads(files, processor, xnack))
        expect(t["code_objects"] == want, f"rocBLAS {target}: hipguard checks {t['code_objects']} files, "
               f"rocBLAS's loader opens {want}")
        mine = [d["code"] for d in errors if d["target"] == t["target"]]
        expect(mine == ([] if want else ["HG214"]), f"rocBLAS {target}: errors {mine}")
        print(f"rocBLAS {t['target']}: {t['code_objects']} files checked ({want} by rocBLAS's glob), "
              f"{t['kernels']} kernels, {t['other_target']} for other targets, errors {mine or 'none'}")
    expect(rc == 1, f"rocBLAS: exit {rc} (gfx942 has no code object)")
    # hipBLASLt has no gfx942 code: one line, not one per file.
    hipblaslt = os.path.join(lib, "hipblaslt/library")
    p = run([A.cli, "check", "--target", "gfx942", hipblaslt])
    lines = [l for l in p.stdout.splitlines() if l.startswith("error ")]
    expect(p.returncode == 1 and len(lines) == 1 and lines[0].startswith("error HG214 [gfx942:sramecc+:xnack-]"),
           f"hipBLASLt on gfx942: exit {p.returncode}, error lines {lines[:3]}")
    procs = sorted({m.group(0) for f in os.listdir(hipblaslt) for m in [re.search(r"gfx[0-9a-f]+", f)] if m})
    for proc in procs:
        expect(bool(lines) and proc in lines[0], f"hipBLASLt's HG214 names {proc}, which it has: {lines[:1]}")
    rows = [l for l in p.stdout.splitlines() if l.startswith("  FAIL") or l.startswith("  ok")]
    expect(len(rows) == 1, f"hipBLASLt on gfx942: one table row, got {len(rows)}")
    print(f"hipBLASLt gfx942: {len(lines)} error line, {len(rows)} row; has {', '.join(procs)}")
    # Where it has code, nothing to say: its hand-written extop kernels disagree with their metadata
    # (a note, HG404) and Tensile packs pointers at 4-byte offsets (fine for scalar loads, HG405).
    rc, doc = cli_json("check", "--target", "gfx90a", hipblaslt)
    found = sorted({d["code"] for d in diagnostics(doc) if d["severity"] != "note"})
    t = doc.get("libraries", [{}])[0].get("targets", [{}])[0]
    expect(rc == 0 and not found, f"hipBLASLt on gfx90a: exit {rc}, findings {found}")
    print(f"hipBLASLt gfx90a: {t.get('code_objects')} files, {t.get('kernels')} kernels checked, findings {found or 'none'}")


# ---- kernel databases: Tensile .dat (rocBLAS, hipBLASLt), AITER .csv ------------------------------

DB_CODES = ("HG701", "HG702", "HG703", "HG704", "HG705", "HG706")


def db_findings(doc):
    """(code, file, kernel, target) of each kernel-database finding above note severity, and the HG707 notes."""
    found = [d for d in diagnostics(doc) if d["code"] in DB_CODES]
    notes = [d for d in diagnostics(doc) if d["code"] == "HG707"]
    return found, notes


def linked_sample(lib, processor, tmp, extra=()):
    """A copy of a Tensile library directory with one processor's files (symlinks) and the shared ones."""
    os.makedirs(tmp, exist_ok=True)
    for f in os.listdir(lib):
        if processor in f.replace("-xnack", "") or "fallback.dat" in f or f in extra:
            os.symlink(os.path.join(lib, f), os.path.join(tmp, f))
    return tmp


def packed_copies(d, tmp, oci=True):
    """The directory d (symlinks followed) as a tar.zst, and (oci) as an OCI image layout made with umoci when
    it is installed: the kernel databases inside must get the verdict of the files installed."""
    name = os.path.basename(d)
    out = [os.path.join(tmp, name + ".tar.zst")]
    subprocess.run(["tar", "--zstd", "-chf", out[0], "-C", os.path.dirname(d), name], check=True)
    if oci and shutil.which("umoci"):
        layout = os.path.join(tmp, name + "-oci")
        bundle = os.path.join(tmp, name + "-bundle")
        subprocess.run(["umoci", "init", "--layout", layout], check=True)
        subprocess.run(["umoci", "new", "--image", layout + ":t"], check=True)
        subprocess.run(["umoci", "unpack", "--rootless", "--image", layout + ":t", bundle], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cp", "-rL", d, os.path.join(bundle, "rootfs", name)], check=True)
        subprocess.run(["umoci", "repack", "--image", layout + ":t", bundle], check=True, stdout=subprocess.DEVNULL)
        out.append(layout)
    return out


def tensile_libs():
    lib = os.path.join(A.root, "usr/lib/x86_64-linux-gnu")
    return f"{lib}/rocblas/4.4.1/library", f"{lib}/hipblaslt/library"


def case_KernelDatabasesReal():
    """The real rocBLAS 6.4 and hipBLASLt 7.1 databases of a few processors: nothing to report, and the
    summary says every solution's code object and kernel were cross-checked."""
    rocblas, lt = tensile_libs()
    samples = [(rocblas, "gfx908", "gfx908", ()), (rocblas, "gfx1030", "gfx1030", ()),
               (lt, "gfx1100", "gfx1100", ("TensileLiteLibrary_lazy_Mapping.dat", "hipblasltExtOpLibrary.dat"))]
    with tempfile.TemporaryDirectory() as tmp:
        for lib, proc, target, extra in samples:
            if not expect(os.path.isdir(lib), f"{lib} is missing from the ROCm root"):
                continue
            name = "hipblaslt" if lib == lt else "rocblas"
            d = linked_sample(lib, proc, os.path.join(tmp, name + proc), extra)
            rc, doc = cli_json("check", "--target", target, d)
            found, notes = db_findings(doc)
            expect(not found, f"{lib} for {target}: the library works, yet {[(f['code'], f['file']) for f in found[:5]]}")
            expect(len(notes) == 1, f"{lib} for {target}: {len(notes)} HG707 summaries, expected 1")
            for n in notes:
                m = re.search(r"(\d+) database file\(s\), (\d+) entries, (\d+) code object file\(s\) and (\d+) kernel", n["message"])
                ok = m and all(int(x) > 0 for x in m.groups())
                expect(ok, f"{lib} for {target}: nothing cross-checked: {n['message']}")
                print(f"{name} {target}: {m.group(0) if m else n['message']}")
            expect(rc == 0, f"{lib} for {target}: exit {rc}")


def patch_kernel_name(dat, out):
    """A copy of a Tensile .dat whose first solution's kernel name has one letter changed (same length, so the
    MessagePack stays valid); returns the new name."""
    data = open(dat, "rb").read()
    m = re.search(rb"\xa4name(\xd9.|\xda..)Cijk_", data, re.S)
    size = int.from_bytes(m.group(1)[1:], "big")
    start = m.end(1)
    name = data[start:start + size].replace(b"Cijk_", b"CXjk_", 1)
    open(out, "wb").write(data[:start] + name + data[start + size:])
    return name.decode()


def case_KernelDatabaseRules():
    """Each rule fires on a modified copy of real rocBLAS 6.4 / hipBLASLt 7.1 files, naming the file."""
    rocblas, lt = tensile_libs()
    with tempfile.TemporaryDirectory() as tmp:
        d = linked_sample(rocblas, "gfx908", os.path.join(tmp, "rocblas"))
        ls = sorted(os.listdir(d))
        dats = [f for f in ls if f.endswith("_gfx908.dat") and not f.startswith("TensileLibrary_lazy")]
        swappable = [f for f in dats if os.path.exists(os.path.join(rocblas, f[:-4].replace("gfx908", "gfx906") + ".co"))]
        swapped_co = swappable[0]
        placeholder, removed_co, renamed_dat, truncated = [f for f in dats if f != swapped_co][:4]
        os.unlink(os.path.join(d, placeholder))                                     # HG703: .dat gone
        os.unlink(os.path.join(d, removed_co[:-4] + ".co"))                         # HG703: .co gone
        other = os.path.join(rocblas, swapped_co[:-4].replace("gfx908", "gfx906") + ".co")
        os.unlink(os.path.join(d, swapped_co[:-4] + ".co"))
        os.symlink(other, os.path.join(d, swapped_co[:-4] + ".co"))                 # HG704: gfx906 code
        os.unlink(os.path.join(d, renamed_dat))
        kernel = patch_kernel_name(os.path.join(rocblas, renamed_dat), os.path.join(d, renamed_dat))  # HG705
        data = open(os.path.join(rocblas, truncated), "rb").read()
        os.unlink(os.path.join(d, truncated))
        open(os.path.join(d, truncated), "wb").write(data[: len(data) // 2])      # HG702
        os.unlink(os.path.join(d, "Kernels.so-000-gfx908.hsaco"))                  # HG706
        rc, doc = cli_json("check", "--target", "gfx908", "--target", "gfx942", d)
        found, _ = db_findings(doc)
        got = {(f["code"], os.path.basename(f["file"]), f.get("kernel", "")) for f in found}
        want = {("HG703", placeholder, ""), ("HG703", removed_co[:-4] + ".co", ""), ("HG704", swapped_co[:-4] + ".co", ""),
                ("HG705", renamed_dat[:-4] + ".co", kernel), ("HG702", truncated, ""),
                ("HG706", "Kernels.so-000-gfx908.hsaco", ""), ("HG701", "rocblas", "")}
        expect(want <= got, f"rocBLAS rules: missing {sorted(want - got)}; got {sorted(got)[:12]}")
        expect(len(got) == len(want), f"rocBLAS rules: unexpected {sorted(got - want)[:6]}")
        expect(rc == 1, f"rocBLAS rules: exit {rc}")
        quoted = [f for f in found if f["code"] == "HG701"]
        expect(quoted and "rocBLAS error: Cannot read" in quoted[0]["message"] and "gfx942" in quoted[0]["message"],
               "HG701 quotes rocBLAS's own message")
        # The same files in a tar.zst and in an OCI layout: the same findings, named by member.
        for packed in packed_copies(d, tmp):
            _, doc = cli_json("check", "--target", "gfx908", "--target", "gfx942", packed)
            found_in, notes_in = db_findings(doc)
            got_in = {(f["code"], os.path.basename(f["file"].split("!")[-1]), f.get("kernel", "")) for f in found_in}
            expect(got_in == got, f"rocBLAS rules in {os.path.basename(packed)}: missing {sorted(got - got_in)}, "
                                  f"unexpected {sorted(got_in - got)}")
            expect(all(f["file"].startswith(packed + "!") for f in found_in + notes_in),
                   f"findings in {packed} name its members")
        # hipBLASLt: its code objects are compressed bundles; one for another processor is refused.
        # hipBLASLt: its code objects are compressed bundles, its extension ops raw code objects; one for
        # another processor is refused, for a solution and for an ext op.
        h = linked_sample(lt, "gfx1100", os.path.join(tmp, "hipblaslt"),
                          ("TensileLiteLibrary_lazy_Mapping.dat", "hipblasltExtOpLibrary.dat"))
        co = [f for f in sorted(os.listdir(h)) if f.endswith("_gfx1100.co") and not f.startswith("extop")
              and os.path.exists(os.path.join(lt, f.replace("gfx1100", "gfx1101")))][0]
        for name in (co, "extop_gfx1100.co"):
            os.unlink(os.path.join(h, name))
            os.symlink(os.path.join(lt, name.replace("gfx1100", "gfx1101")), os.path.join(h, name))
        rc, doc = cli_json("check", "--target", "gfx1100", h)
        found, _ = db_findings(doc)
        got = {(f["code"], os.path.basename(f["file"])) for f in found}
        want_lt = {("HG704", co), ("HG704", "extop_gfx1100.co")}
        expect(got == want_lt, f"hipBLASLt rules: expected {sorted(want_lt)}, got {sorted(got)[:6]}")
        # hipBLASLt's compressed bundles inside a tar.zst: the same refusals, named by member.
        for packed in packed_copies(h, tmp, oci=False):
            _, doc = cli_json("check", "--target", "gfx1100", packed)
            found_in, notes_in = db_findings(doc)
            got_in = {(f["code"], os.path.basename(f["file"].split("!")[-1])) for f in found_in}
            expect(got_in == want_lt and len(notes_in) == 1,
                   f"hipBLASLt rules in {os.path.basename(packed)}: {sorted(got_in)}, {len(notes_in)} HG707")
        print(f"rules fired: {sorted(c for c, *_ in want)} (rocBLAS), HG704 twice (hipBLASLt: a solution, an ext op)")


# The header of AITER's fmoe kernel lists (ROCm/aiter hsa/gfx942/fmoe/gelu/fmoe_bf16_pertokenFp8_g1u1_gelu.csv):
# knl_name and co_name are the columns hsa/codegen.py requires; the others are the kernel's tuning parameters.
AITER_HEADER = "knl_name,co_name,atm,vskip,smf,tg_num_perCU,ps,subGU_m,subGU_n"


def aiter_tree(tmp):
    """hsa/<arch>/<module>/ from the corpus's AITER code objects (MANIFEST.tsv: source_path), with one kernel
    list per directory written the way AITER's own are: one row per code object, its kernel's mangled name."""
    corpus = os.path.join(A.corpus, "aiter")
    rows = {}
    for line in open(os.path.join(corpus, "MANIFEST.tsv")).read().splitlines()[1:]:
        name, _arch, _sha, source = line.split("\t")
        dest = os.path.join(tmp, source)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.symlink(os.path.join(corpus, name), dest)
        _, doc = cli_json("inspect", dest)
        kernels = [k["name"] for img in images(doc) for co in img["code_objects"] for k in co["kernels"]]
        rows.setdefault(os.path.dirname(dest), []).append(f"{kernels[0]},{os.path.basename(dest)},0,1,0,1,0,32,128")
    for d, lines in rows.items():
        with open(os.path.join(d, os.path.basename(d) + ".csv"), "w") as f:
            f.write("\n".join([AITER_HEADER, *lines]) + "\n")
    return os.path.join(tmp, "hsa"), rows


def case_AiterKernelLists():
    """AITER's hsa/ tree built from real AITER code objects: clean for gfx942 and gfx950; a missing code object,
    one for another processor, a wrong kernel name and a csv without its columns are each reported."""
    if not os.path.isfile(os.path.join(A.corpus, "aiter", "MANIFEST.tsv")):
        skip(f"no AITER corpus at {A.corpus}/aiter")
    with tempfile.TemporaryDirectory() as tmp:
        hsa, rows = aiter_tree(tmp)
        rc, doc = cli_json("check", "--target", "gfx942", "--target", "gfx950", hsa)
        found, notes = db_findings(doc)
        expect(not found, f"AITER tree as built: {[(f['code'], f['file']) for f in found[:5]]}")
        expect(len(notes) == 2 and all(" 0 kernel" not in n["message"] for n in notes),
               f"AITER summaries: {[n['message'] for n in notes]}")
        for n in notes:
            print(n["message"])
        # (the exit status is 1: hsa/ holds code objects for other processors, HG202 for each file checked alone)
        fmoe = sorted(d for d in rows if d.endswith("gfx942/fmoe/gelu"))[0]
        cos = sorted(f for f in os.listdir(fmoe) if f.endswith(".co"))
        os.unlink(os.path.join(fmoe, cos[0]))                                    # HG703
        os.unlink(os.path.join(fmoe, cos[1]))
        gfx950 = [os.path.join(d, f) for d in rows if "/gfx950/" in d for f in os.listdir(d) if f.endswith(".co")][0]
        os.symlink(os.path.realpath(gfx950), os.path.join(fmoe, cos[1]))        # HG704
        csv = os.path.join(fmoe, "gelu.csv")
        lines = open(csv).read().split("\n")
        row = [i for i, l in enumerate(lines) if l and i > 0 and l.split(",")[1] not in cos[:2]][0]
        third = lines[row].split(",")[1]
        wrong = lines[row].split(",")[0].replace("_ZN5aiter", "_ZN5aitex", 1)
        lines[row] = wrong + lines[row][lines[row].index(","):]                  # HG705
        open(csv, "w").write("\n".join(lines))
        pa = sorted(d for d in rows if d.endswith("gfx942/pa"))[0]
        open(os.path.join(pa, "broken.csv"), "w").write("kernel,file\nx,y.co\n")   # HG702
        rc, doc = cli_json("check", "--target", "gfx942", "--target", "gfx1100", hsa)
        found, _ = db_findings(doc)
        got = {(f["code"], os.path.basename(f["file"])) for f in found}
        want = {("HG703", cos[0]), ("HG704", cos[1]), ("HG705", third), ("HG702", "broken.csv"), ("HG701", "hsa")}
        expect(got == want, f"AITER rules: missing {sorted(want - got)}, unexpected {sorted(got - want)}")
        expect(any("kernel registration failed for '" + wrong in f["message"]
                   for f in found), "HG705 quotes AITER's own message")
        for packed in packed_copies(hsa, tmp):
            _, doc = cli_json("check", "--target", "gfx942", "--target", "gfx1100", packed)
            found_in, _ = db_findings(doc)
            got_in = {(f["code"], os.path.basename(f["file"].split("!")[-1])) for f in found_in}
            expect(got_in == got, f"AITER rules in {os.path.basename(packed)}: missing {sorted(got - got_in)}, "
                                  f"unexpected {sorted(got_in - got)}")
        print(f"rules fired: {sorted(c for c, _ in want)}")


# ---- the shim with the real HIP 6.4 runtime ---------------------------------------------------------

def case_ForksUnderHip64():
    """Fork-safe under the real HIP 6.4 runtime: threads_host's 4 threads dlopen a library built by
    hipcc 7 (tests/rocm/apps/fork_lib.hip), which registers its fat binary, and check and launch its
    kernel 200 times each while the main thread forks 1,000 times; each child makes its library's
    first kernel call and launch. No hang (killed after 120 s) and no failure, without the shim and
    under it in warn and strict mode, whatever the settings (no report)."""
    threads_host = os.path.join(A.build, "tests", "apps", "threads_host")
    if not os.path.exists(threads_host):
        skip(f"{threads_host} was not built")
    lib = app("libfork_lib.so")
    want = "4 threads, 800 launches, 1000 forks, 0 failures"
    with tempfile.TemporaryDirectory(dir=A.build) as tmp:
        libs = []
        for i in range(2):  # the threads' copy, and the one only the children call
            libs.append(os.path.join(tmp, f"libfork{i}.so"))
            shutil.copy(lib, libs[-1])
        cmd = ["/usr/bin/timeout", "-s", "KILL", "120", threads_host, "4", "200", *libs]
        for label, env in (("without the shim", []),
                           ("warn", [f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi300x"]),
                           ("strict", [f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi300x", "HIPGUARD_MODE=strict"])):
            p = in_root(*cmd, env=["THREADS_HOST_FORKS=1000", *env], binds=[tmp])
            expect(p.returncode == 0 and want in p.stdout,
                   f"{label}: exit {p.returncode} (137: hung, killed), {p.stdout.strip()!r}: {p.stderr[-600:]}")
            expect(not re.search(r"\b(error|warning) HG\d+", p.stderr), f"{label}: {p.stderr[-600:]}")
    print(f"forks under libamdhip64.so.6: {want}, without the shim, warn and strict")


def case_ShimOnHip64():
    exe = app("saxpy_specific")
    base = in_root(exe)
    expect(base.returncode == 0 and "saxpy: launch" in base.stdout,
           f"without the shim: exit {base.returncode}, {base.stdout!r} {base.stderr[-300:]!r}")
    with tempfile.TemporaryDirectory(dir=A.build) as tmp:
        # Warn mode: the program's output and exit status are its own.
        warn = in_root(exe, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi300x"], binds=[tmp])
        expect(warn.returncode == base.returncode, f"warn: exit {warn.returncode}, without {base.returncode}")
        expect(warn.stdout == base.stdout, f"warn: stdout {warn.stdout!r}, without {base.stdout!r}")
        # Strict mode, a GPU the program has no code for: stopped with the exit code and one line.
        report = os.path.join(tmp, "strict.json")
        strict = in_root(exe, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=gfx908", "HIPGUARD_MODE=strict",
                                   f"HIPGUARD_REPORT={report}"], binds=[tmp])
        errors = [l for l in strict.stderr.splitlines() if re.search(r"\berror HG\d+", l)]
        expect(strict.returncode == 86, f"strict: exit {strict.returncode}, want 86: {strict.stderr[-400:]}")
        expect(len(errors) == 1 and "HG201" in errors[0], f"strict: error lines {errors}")
        expect("saxpy: launch" not in strict.stdout, "strict: main ran")
        try:
            with open(report) as f:
                doc = json.load(f)
            found = [d["code"] for d in diagnostics(doc)]
            expect(doc.get("run", {}).get("mode") == "strict" and "HG201" in found,
                   f"strict report: mode {doc.get('run', {}).get('mode')}, findings {found}")
        except (OSError, json.JSONDecodeError) as e:
            fail(f"strict report {report}: {e}")
        # Strict mode, a GPU it has code for: the program runs as without the shim.
        ok = in_root(exe, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi300x", "HIPGUARD_MODE=strict"])
        expect(ok.returncode == base.returncode and ok.stdout == base.stdout,
               f"strict on mi300x: exit {ok.returncode}, stdout {ok.stdout!r}")
    print(f"shim with libamdhip64.so.6: warn, strict stop (exit {strict.returncode}), strict run checked")


# ---- selection as each HIP version does it (HG213, HG212) ----------------------------------------

def image_of(tmp, files, entrypoint):
    """An OCI image layout made with umoci: `files` ({path in the image: host file}) and the root's HIP
    runtime (libamdhip64.so.6, a link to its versioned file), started as `entrypoint`."""
    layout, bundle = os.path.join(tmp, "oci"), os.path.join(tmp, "bundle")
    for args in (["init", "--layout", layout], ["new", "--image", layout + ":t"],
                 ["unpack", "--image", layout + ":t", bundle]):
        run(["umoci", *args], check=True)
    rootfs = os.path.join(bundle, "rootfs")
    hip = os.path.realpath(os.path.join(A.root, "usr/lib/x86_64-linux-gnu/libamdhip64.so.6"))
    files = {**files, "usr/lib/x86_64-linux-gnu/" + os.path.basename(hip): hip}
    for at, host in files.items():
        os.makedirs(os.path.dirname(os.path.join(rootfs, at)), exist_ok=True)
        shutil.copy(host, os.path.join(rootfs, at))
    os.symlink(os.path.basename(hip), os.path.join(rootfs, "usr/lib/x86_64-linux-gnu/libamdhip64.so.6"))
    run(["umoci", "repack", "--image", layout + ":t", bundle], check=True)
    run(["umoci", "config", "--image", layout + ":t", "--config.entrypoint", entrypoint], check=True)
    return layout


def verdicts_and_codes(doc):
    return [v for img in images(doc) for v in img["verdicts"]], {d["code"] for d in diagnostics(doc)}


def case_RuntimeVersions():
    gen = app("saxpy_gfx9_generic")  # hipcc 7.0.2, --offload-arch=gfx9-generic only
    for runtime, want_rc in (("6.4", 0), ("7.0", 1), (None, 1)):
        rc, doc = cli_json("check", *(["--runtime", runtime] if runtime else []), "--target", "mi50", gen)
        vs, codes = verdicts_and_codes(doc)
        expect(rc == want_rc, f"saxpy_gfx9_generic on mi50 under {runtime or 'the default'}: exit {rc}, want {want_rc}")
        expect(("HG213" in codes) == (want_rc == 1), f"saxpy_gfx9_generic under {runtime}: codes {codes}")
        if runtime == "6.4":
            expect([selected_processor(v) for v in vs] == ["gfx9-generic"], f"under 6.4: selected {vs}")
    rc, _ = cli_json("check", "--runtime", "7.0", "--target", "gfx900:xnack-", gen)
    expect(rc == 0, f"saxpy_gfx9_generic on gfx900 under 7.0: exit {rc}")
    # In the root (--sysroot), as the root's libamdhip64.so.6.4.x selects (HG125 says so), unless --runtime.
    for runtime, want_rc in ((None, 0), ("7.0", 1)):
        rc, doc = cli_json("check", "--sysroot", A.root, *(["--runtime", runtime] if runtime else []),
                           "--target", "mi50", gen)
        said = [d["message"] for d in diagnostics(doc) if d["code"] == "HG125"]
        expect(rc == want_rc and len(said) == (0 if runtime else 1) and all("loads HIP 6.4" in m for m in said),
               f"saxpy_gfx9_generic in the root under {runtime or 'its runtime'}: exit {rc}, HG125 {said}")
    # The same program and runtime as a container image: read top first, so checked as the newest and HG125
    # names the --runtime that checks it as the image runs it.
    with tempfile.TemporaryDirectory(dir=A.build) as tmp:
        layout = image_of(tmp, {"usr/bin/saxpy": gen}, "/usr/bin/saxpy")
        # Named beside --sysroot, an image is a machine of its own: not checked as the root's runtime.
        for args, want_rc in (([], 1), (["--runtime", "6.4"], 0), (["--sysroot", A.root], 1)):
            rc, doc = cli_json("check", *args, "--target", "mi50", layout)
            said = [d["fix"] for d in diagnostics(doc) if d["code"] == "HG125"]
            quiet = "--runtime" in args
            expect(rc == want_rc and len(said) == (0 if quiet else 1) and all("--runtime 6.4" in f for f in said),
                   f"saxpy_gfx9_generic in an image, {args or 'the default'}: exit {rc}, HG125 fix {said}")
    # One bare gfx90a entry, two gfx90a GPUs with different xnack in one process.
    mfma = app("mfma")
    gpus = ["--target", "gfx90a:xnack+", "--target", "gfx90a:xnack-"]
    rc, doc = cli_json("check", *gpus, mfma)
    expect(rc == 0, f"mfma on two machines: exit {rc}")
    rc, doc = cli_json("check", "--one-process", *gpus, mfma)
    _, codes = verdicts_and_codes(doc)
    expect(rc == 1 and "HG212" in codes, f"mfma in one process: exit {rc}, codes {codes}")
    # The shim under the root's HIP 6.4 (libamdhip64.so.6.4.x) selects as 6.4: the gfx9-generic program is not stopped.
    base = in_root(gen)
    strict = in_root(gen, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi50", "HIPGUARD_MODE=strict",
                               "HIPGUARD_LOG_LEVEL=debug"])
    expect(strict.returncode == base.returncode and strict.stdout == base.stdout,
           f"shim on HIP 6.4, mi50: exit {strict.returncode} (without {base.returncode}): {strict.stderr[-400:]}")
    expect("as HIP 6.4 does" in strict.stderr, f"shim: runtime version not taken from libamdhip64: {strict.stderr[-400:]}")
    mixed = in_root(mfma, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=gfx90a:xnack+,gfx90a:xnack-"])
    expect("HG212" in mixed.stderr, f"shim, two gfx90a GPUs xnack+/-: no HG212: {mixed.stderr[-400:]}")
    print("runtime versions: gfx9-generic on mi50 under 6.4 / 7.x, in the root and in an image of it (HG125), "
          "one process with xnack+/-, the shim on HIP 6.4")


def case_HipfftTest():
    """hipfft-test ships gfx942 code and loads rocFFT, whose fat binary holds only __device__ variables
    (no gfx942 entry): strict mode on an MI300X must not stop it (HG211, a warning; issue 27)."""
    exe = "/usr/libexec/rocm/libhipfft0-tests/hipfft-test"
    cmd = [exe, "--gtest_filter=NoSuchTest"]
    base = in_root(*cmd)
    expect(base.returncode == 0, f"hipfft-test without the shim: exit {base.returncode} {base.stderr[-300:]}")
    strict = in_root(*cmd, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=mi300x", "HIPGUARD_MODE=strict"])
    expect(strict.returncode == base.returncode, f"hipfft-test strict on mi300x: exit {strict.returncode}: "
                                                 f"{strict.stderr[-400:]}")
    warned = [l for l in strict.stderr.splitlines() if "warning HG211" in l and "librocfft.so.0" in l]
    expect(len(warned) == 1, f"hipfft-test strict: HG211 lines {warned}")
    expect(not re.search(r"\berror HG\d+", strict.stderr), f"hipfft-test strict: errors {strict.stderr[-400:]}")
    print(f"hipfft-test: exit {strict.returncode} in strict mode on mi300x, rocFFT's fat binary HG211")


def case_LlamaCli():
    cmd = ["llama-cli", "--list-devices"]
    base = in_root(*cmd)
    expect(base.returncode == 0, f"llama-cli without the shim: exit {base.returncode} {base.stderr[-300:]}")
    warn = in_root(*cmd, env=[f"LD_PRELOAD={A.shim}", "HIPGUARD_TARGET=gfx90a"])
    expect(warn.returncode == base.returncode, f"llama-cli warn: exit {warn.returncode}, without {base.returncode}")
    expect(warn.stdout == base.stdout, f"llama-cli warn: stdout differs: {warn.stdout[-300:]!r}")
    print(f"llama-cli --list-devices: exit {base.returncode} with and without the shim")


# ---- a program with what it loads (dependencies.h) -------------------------------------------------

# Programs and libraries whose DT_NEEDED closure must be what the root's own dynamic loader maps.
ORACLE_FILES = ["/usr/bin/llama-cli", "/usr/libexec/rocm/libhipfft0-tests/hipfft-test",
                "/usr/lib/x86_64-linux-gnu/libhipblas.so.2", "/usr/lib/x86_64-linux-gnu/libmagma.so.2",
                "/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so"]
CANON = 'while read -r p; do case $p in NOTFOUND*) echo "$p";; *) readlink -f "$p";; esac; done'


def ldd_in_root(path):
    """The root's ldd (its ld.so --list): the objects it maps, canonical, in its order."""
    script = (f'ldd "$1" | awk \'$2 == "=>" && $3 == "not" {{print "NOTFOUND " $1; next}} '
              f'$2 == "=>" {{print $3; next}} $1 ~ /^\\// {{print $1}}\' | {CANON}')
    p = in_root("sh", "-c", script, "_", path)
    expect(p.returncode == 0, f"ldd {path} in the root: exit {p.returncode} {p.stderr[-300:]}")
    return p.stdout.split("\n")[:-1]


def resolved(lines, prefix=""):
    return [l.split("\t")[2][len(prefix):] for l in lines if l.startswith("needed\t")]


def case_LoaderOracle():
    for path in ORACLE_FILES:
        want = ldd_in_root(path)
        # From outside, --sysroot: the paths come back resolved inside the root.
        mine = run([A.deps_list, "--sysroot", A.root, A.root + path])
        got = resolved(mine.stdout.splitlines(), A.root)
        # Inside the root, no sysroot: the paths as found, canonicalised by the root's readlink.
        inside = in_root("sh", "-c", f'"$0" "$1" | awk -F "\\t" \'$1 == "needed" {{print $3}}\' | {CANON}',
                         A.deps_list, path)
        got_inside = inside.stdout.split("\n")[:-1]
        expect(want and got == want, f"{path}: hipguard --sysroot resolves {len(got)} libraries, ldd {len(want)}: "
                                     f"{[(g, w) for g, w in zip(got, want) if g != w][:3] or (got[len(want):] + want[len(got):])[:3]}")
        expect(got_inside == want, f"{path}: hipguard inside the root resolves {got_inside[:3]}..., ldd {want[:3]}...")
        expect(not [l for l in mine.stdout.splitlines() if l.startswith("finding\tHG120")],
               f"{path}: HG120 where ldd finds everything")
        print(f"{path}: {len(want)} libraries, in ldd's order, from outside (--sysroot) and inside the root")


def files_by_name(doc):
    return {os.path.basename(f["path"]): f for f in doc["files"]}


def case_ProgramWithLibraries():
    exe = A.root + "/usr/bin/llama-cli"
    rc, doc = cli_json("check", "--target", "gfx90a", "--sysroot", A.root, exe)
    files = files_by_name(doc)
    hip, rocblas = files.get("libggml-hip.so"), files.get("librocblas.so.4.4")
    expect(rc == 0, f"llama-cli with its libraries on gfx90a: exit {rc}: {[d['code'] for d in diagnostics(doc)][:5]}")
    expect(hip and hip.get("needed_by", "").endswith("/libggml.so.0.27.0"), f"libggml-hip.so: {hip and hip.get('needed_by')}")
    expect(rocblas and rocblas.get("needed_by", "").endswith("/ggml/backends0/libggml-hip.so"),
           f"librocblas: {rocblas and rocblas.get('needed_by')}")
    tensile = [f for f in doc["files"] if "/rocblas/4.4.1/library/" in f["path"]]
    tdir = A.root + "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"
    on_disk = [n for n in os.listdir(tdir) if n.endswith((".co", ".hsaco"))]
    expect(len(tensile) == len(on_disk) and all(f.get("needed_by", "").endswith("/librocblas.so.4.4") and
                                                f.get("library", "").endswith("/rocblas/4.4.1/library")
                                                for f in tensile),
           f"rocBLAS's Tensile files: {len(tensile)} checked as its library, {len(on_disk)} in {tdir}")
    own = [d["code"] for d in files["llama-cli"]["diagnostics"]] if "llama-cli" in files else []
    expect(own == ["HG125"] and not files["llama-cli"]["images"] and "HG107" not in {d["code"] for d in diagnostics(doc)},
           f"llama-cli itself (no GPU code) reported with {own}, not only the root's runtime (HG125)")
    # The same from inside the root, without --sysroot: the same files and who needs each.
    p = in_root(A.cli, "check", "--json", "--target", "gfx90a", "/usr/bin/llama-cli")
    inside = json.loads(p.stdout) if p.stdout.startswith("{") else {"files": []}
    canon = lambda path: os.path.realpath(A.root + path)
    want = [(f["path"], f.get("needed_by")) for f in doc["files"] if f["images"]]
    got = [(canon(f["path"]), canon(f["needed_by"]) if f.get("needed_by") else None) for f in inside["files"]
           if f["images"]]
    expect(got == want and p.returncode == rc, f"inside the root: exit {p.returncode}, {len(got)} files, --sysroot "
                                               f"{len(want)}: {[(g, w) for g, w in zip(got, want) if g != w][:2]}")
    # gfx942: Debian builds ggml's HIP backend and rocBLAS (its Tensile library too: HG214) without it.
    rc, doc = cli_json("check", "--target", "gfx942", "--sysroot", A.root, exe)
    said = {(os.path.basename(f["path"]), d["code"]) for f in doc["files"]
            for d in f["diagnostics"] + [d for img in f["images"] for d in img["diagnostics"]]}
    expect(rc == 1 and ("libggml-hip.so", "HG201") in said and ("library", "HG214") in said,
           f"llama-cli on gfx942: exit {rc}, {sorted(said)[:6]}")
    # hipBLAS has no kernels of its own: with rocBLAS no HG107; --no-deps is the file alone.
    hipblas = A.root + "/usr/lib/x86_64-linux-gnu/libhipblas.so.2"
    rc, doc = cli_json("check", "--target", "gfx90a", "--sysroot", A.root, hipblas)
    files = files_by_name(doc)
    expect(rc == 0 and "librocblas.so.4.4" in files and "HG107" not in {d["code"] for d in diagnostics(doc)},
           f"libhipblas.so.2 with rocBLAS: exit {rc}, files {sorted(files)[:4]}")
    rc, doc = cli_json("check", "--target", "gfx90a", "--no-deps", hipblas)
    expect(rc == 1 and [d["code"] for d in diagnostics(doc)] == ["HG107"], f"libhipblas.so.2 --no-deps: exit {rc}")
    # rocBLAS named itself: its Tensile files are what it opens, as when a program loads it.
    named = A.root + "/usr/lib/x86_64-linux-gnu/librocblas.so.4"
    rc, doc = cli_json("check", "--target", "gfx90a", "--sysroot", A.root, named)
    opened = [f for f in doc["files"] if f.get("needed_by") == named and "/rocblas/4.4.1/library/" in f["path"]]
    expect(rc == 0 and len(opened) == len(on_disk), f"librocblas.so.4 named: exit {rc}, {len(opened)} of "
                                                    f"{len(on_disk)} Tensile files checked as what it opens")
    print(f"llama-cli: {len(want)} files with GPU code loaded (libggml-hip.so, rocBLAS, {len(tensile)} Tensile files), "
          f"the same inside the root; gfx942 fails in libggml-hip.so and rocBLAS")


NEEDS_NO_ROOT = {"AiterKernelLists"}  # real inputs from the corpus (HIPGUARD_CORPUS_DIR) only


# ---- archives read in place --------------------------------------------------------------------

def by_name(doc, name_of):
    """{name: the file's report as JSON text, its own path replaced by <path>} for the files name_of names."""
    out = {}
    for f in doc["files"]:
        name = name_of(f["path"])
        if name is None:
            continue
        text = json.dumps({k: f[k] for k in ("ok", "diagnostics", "images")}, sort_keys=True)
        out[name] = text.replace(json.dumps(f["path"])[1:-1], "<path>")
    return out


def same_reports(what, got, want):
    expect(sorted(got) == sorted(want), f"{what}: members {sorted(got)}, files {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        expect(got[name] == want[name], f"{what}: {name} differs:\n  member {got[name][:600]}\n  file   {want[name][:600]}")


def deb_file(package):
    debs = os.path.join(A.root, "var/cache/hipguard-debs")
    found = sorted(f for f in os.listdir(debs) if f.startswith(package + "_")) if os.path.isdir(debs) else []
    if not found:
        skip(f"no {package} .deb in {debs} (scripts/rocm-root.sh downloads it: re-run it as root)")
    return os.path.join(debs, found[-1])


def case_Archives():
    """Real .deb files, and a wheel, a tar.zst and a .a made here from real files, read in place: every member
    with GPU code gets the report its extracted file gets (dpkg-deb -x, the oracle), named ARCHIVE!MEMBER."""
    import time
    targets = ["--target", "gfx942", "--target", "gfx90a"]
    with tempfile.TemporaryDirectory() as tmp:
        for package in ("libhipfft0-tests", "librocfft0"):
            deb = deb_file(package)
            tree = os.path.join(tmp, package)
            expect(run(["dpkg-deb", "-x", deb, tree]).returncode == 0, f"dpkg-deb -x {deb}")
            t0 = time.monotonic()
            rc_deb, in_deb = cli_json("check", "--no-deps", *targets, deb)
            # The oracle: every regular file of the tree named on the command line (a symlink is a second
            # name of a library, not a member; a directory walk would group the files into kernel
            # libraries); those without GPU code (HG107 alone) are what the archive passes over silently.
            regular = sorted(os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs
                             if not os.path.islink(os.path.join(d, f)))
            t1 = time.monotonic()
            rc_tree, in_tree = cli_json("check", "--no-deps", *targets, *regular)
            t2 = time.monotonic()
            no_gpu = {f["path"] for f in in_tree["files"]
                      if not f["images"] and [d["code"] for d in f["diagnostics"]] == ["HG107"]}
            rc_tree = 1 if any(not f["ok"] for f in in_tree["files"] if f["path"] not in no_gpu) else 0
            members = by_name(in_deb, lambda p: p[len(deb) + 1:] if p.startswith(deb + "!") else None)
            files = by_name(in_tree, lambda p: None if p in no_gpu else os.path.relpath(p, tree))
            expect(members, f"{deb}: no member with GPU code")
            same_reports(os.path.basename(deb), members, files)
            expect(rc_deb == rc_tree, f"{deb}: exit {rc_deb}, extracted {rc_tree}")
            print(f"{os.path.basename(deb)}: {len(members)} members with GPU code ({', '.join(sorted(members))}), "
                  f"{len(images(in_deb))} fat binaries, exit {rc_deb}; {t1 - t0:.2f} s, extracted {t2 - t1:.2f} s")
        # No GPU code at all: HG107 for the package named, HG110 for a directory holding only it.
        deb = deb_file("libhipblas2")
        rc, doc = cli_json("check", "--no-deps", *targets, deb)
        codes = [(f["path"], d["code"]) for f in doc["files"] for d in f["diagnostics"]]
        expect(rc == 1 and codes == [(deb, "HG107")], f"{deb}: exit {rc}, {codes}")
        only = os.path.join(tmp, "only-hipblas")
        os.mkdir(only)
        shutil.copy(deb, only)
        rc, doc = cli_json("check", "--no-deps", *targets, only)
        codes = [(f["path"], d["code"]) for f in doc["files"] for d in f["diagnostics"]]
        expect(rc == 1 and codes == [(only, "HG110")], f"{only}: exit {rc}, {codes}")

        # Build outputs: relocatable objects (hipcc 7 -c, old and new offload driver), a .a of them, and a wheel
        # and a tar.zst of those and of real libraries and programs; each member as its original file.
        originals = {name: app(name) for name in ("lds_heavy.o", "lds_heavy_new_driver.o", "saxpy_compressed")}
        originals["librocfft.so.0"] = os.path.realpath(os.path.join(tmp, "librocfft0", "usr/lib/x86_64-linux-gnu",
                                                                    "librocfft.so.0"))
        stage = os.path.join(tmp, "stage")
        os.makedirs(os.path.join(stage, "pkg/lib"))
        for name, path in originals.items():
            shutil.copy(path, os.path.join(stage, "pkg/lib", name))
        objects = [os.path.join(stage, "pkg/lib", o) for o in ("lds_heavy.o", "lds_heavy_new_driver.o")]
        expect(run(["ar", "rcs", os.path.join(stage, "pkg/lib/libkernels.a"), *objects]).returncode == 0, "ar rcs")
        wheel = os.path.join(tmp, "pkg-1.0-py3-none-linux_x86_64.whl")
        tarzst = os.path.join(tmp, "pkg.tar.zst")
        expect(run(["sh", "-c", f"cd {stage} && zip -qr {wheel} pkg"]).returncode == 0, "zip")
        expect(run(["tar", "-I", "zstd", "-C", stage, "-cf", tarzst, "pkg"]).returncode == 0, "tar --zstd")
        rc, plain = cli_json("check", "--no-deps", *targets, *[os.path.join(stage, "pkg/lib", n) for n in originals])
        want = by_name(plain, lambda p: "pkg/lib/" + os.path.basename(p))
        for o in ("lds_heavy.o", "lds_heavy_new_driver.o"):
            want["pkg/lib/libkernels.a!" + o] = want["pkg/lib/" + o]
        for archive in (wheel, tarzst):
            rc_a, doc = cli_json("check", "--no-deps", *targets, archive)
            same_reports(os.path.basename(archive), by_name(doc, lambda p: p[len(archive) + 1:]), want)
            expect(rc_a == rc, f"{archive}: exit {rc_a}, the files {rc}")
        # The same whatever --jobs; inspect reads the members too.
        every = [wheel, tarzst, deb_file("libhipfft0-tests"), deb]
        one = run([A.cli, "check", "--no-deps", *targets, "--jobs", "1", "--json", *every])
        four = run([A.cli, "check", "--no-deps", *targets, "--jobs", "4", "--json", *every])
        expect(one.stdout == four.stdout and one.stdout, "--jobs 1 and --jobs 4 differ")
        inspect = run([A.cli, "inspect", wheel])
        for n in ("pkg/lib/saxpy_compressed", "pkg/lib/libkernels.a!lds_heavy_new_driver.o"):
            expect(f"{wheel}!{n}" in inspect.stdout, f"inspect {wheel}: no {n}: {inspect.stdout[:400]}")
        print(f"wheel and tar.zst: {len(want)} members each as their files ({', '.join(sorted(want))})")
        # -fgpu-rdc with the new driver: LLVM IR in .llvm.offloading, nothing to check before the link.
        rc, doc = cli_json("check", "--no-deps", *targets, app("saxpy_rdc_new_driver.o"))
        msgs = [d["message"] for f in doc["files"] for d in f["diagnostics"] if d["code"] == "HG107"]
        expect(rc == 1 and len(msgs) == 1 and "LLVM IR for gfx942" in msgs[0],
               f"saxpy_rdc_new_driver.o: exit {rc}, {msgs}")


def case_KernelLibraryArchives():
    """A kernel library read from an archive is the library it is once installed: a sample of rocBLAS
    6.4's library/ directory (four code objects of each of three processors), checked as the installed
    tree (a directory walk) and as a tar, a tar.zst, a wheel and a .deb of that tree, gives the same
    libraries, the same counts per target and the same findings. Before, each member built for another
    processor was an error of its own (here 36 HG202 and 2 HG203; for the librocblas4 .deb on gfx90a,
    694 and 77), where the installed library passes. Kernel databases (.dat) are left out: an archive's
    are not read yet."""
    rocblas, _ = tensile_libs()
    procs = ("gfx908", "gfx90a", "gfx1100")
    names = sorted(f for f in os.listdir(rocblas) if f.endswith("co"))
    sample = [f for p in procs for f in [n for n in names if p in n][:4]]
    targets = [a for t in ("gfx90a:xnack-", "gfx908", "gfx1100", "gfx942") for a in ("--target", t)]
    inner = "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"

    def verdict(doc, prefix):
        libs = [(l["name"][len(prefix):], [(t["target"], t["code_objects"], t["other_target"], t["kernels"])
                                            for t in l["targets"]]) for l in doc.get("libraries", [])]
        found = sorted((d["code"], d.get("target", "")) for d in diagnostics(doc))
        return libs, found

    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "pkg")
        os.makedirs(os.path.join(tree, inner))
        for f in sample:
            shutil.copy(os.path.join(rocblas, f), os.path.join(tree, inner, f))
        rc, doc = cli_json("check", "--no-deps", *targets, tree)
        want = verdict(doc, tree + "/")
        expect(rc == 1 and [c for c, _ in want[1]] == ["HG214"] and len(want[0]) == 1,
               f"the installed sample: exit {rc}, libraries {want[0]}, findings {want[1]}")
        archives = {"tar": os.path.join(tmp, "rocblas.tar"), "tar.zst": os.path.join(tmp, "rocblas.tar.zst"),
                    "wheel": os.path.join(tmp, "rocblas-1.0-py3-none-linux_x86_64.whl"),
                    "deb": os.path.join(tmp, "rocblas.deb")}
        expect(run(["tar", "-C", tree, "-cf", archives["tar"], "usr"]).returncode == 0, "tar")
        expect(run(["tar", "-I", "zstd -1", "-C", tree, "-cf", archives["tar.zst"], "usr"]).returncode == 0, "tar --zstd")
        expect(run(["sh", "-c", f"cd {tree} && zip -q0r {archives['wheel']} usr"]).returncode == 0, "zip")
        os.makedirs(os.path.join(tree, "DEBIAN"))
        with open(os.path.join(tree, "DEBIAN/control"), "w") as c:
            c.write("Package: rocblas-sample\nVersion: 1\nArchitecture: amd64\nMaintainer: hipguard <t@example.org>\n"
                    "Description: a sample of rocBLAS 6.4's kernel library\n")
        expect(run(["dpkg-deb", "-Zxz", "-z0", "--root-owner-group", "--build", tree, archives["deb"]]).returncode == 0,
               "dpkg-deb --build")
        for kind, path in archives.items():
            rc_a, doc = cli_json("check", "--no-deps", *targets, path)
            libs = doc.get("libraries", [])
            prefix = libs[0]["name"][:-len(inner)] if libs and libs[0]["name"].endswith(inner) else ""
            got = verdict(doc, prefix)
            expect(got == want, f"{kind}: {got}\n  installed: {want}")
            expect(rc_a == rc, f"{kind}: exit {rc_a}, installed {rc}")
        print(f"rocBLAS sample ({len(sample)} code objects of {', '.join(procs)}): installed and as "
              f"{', '.join(archives)}: {want[0][0][1]}, findings {want[1]}")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    for a in ("root", "apps", "cli", "shim", "source", "build"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--deps-list")
    ap.add_argument("--corpus", default="")
    A = ap.parse_args()
    if A.case not in NEEDS_NO_ROOT and not os.path.exists(os.path.join(A.root, ".hipguard-root")):
        skip(f"no ROCm root at {A.root} (scripts/rocm-root.sh builds it; needs root and Debian's archive)")
    globals()["case_" + A.case]()
    print(f"Rocm.{A.case}: {'FAILED, ' + str(len(failures)) + ' failures' if failures else 'passed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
