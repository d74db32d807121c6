#!/usr/bin/env python3
# Differential tests: hipguard's kernel metadata and bundle selection against AMD's own readers
# (comgr 3 in the ROCm root via comgr_oracle.cpp, and llvm-readelf --notes) on a fixed sample of the
# root's real libraries. Modes: metadata (Oracle.ComgrMetadata), readelf (Oracle.ReadelfNotes),
# selection (Oracle.ComgrSelection). Exit 0: no mismatch; 1: mismatches (printed); 77: skipped.
import argparse
import glob
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
LIB = "usr/lib/x86_64-linux-gnu"
# What each ROCm root (scripts/rocm-root.sh --stack) is sampled for: fat binaries (host ELF files with
# .hip_fatbin), Tensile library directories (globs), the root's LLVM (clang++ for the comgr oracle,
# llvm-readelf) and the HIP runtime whose comgr queries the selection test models.
STACKS = {
    "6.4": dict(fat_binaries=[f"{LIB}/librocsparse.so.1", f"{LIB}/librocsolver.so.0", f"{LIB}/libmagma.so.2",
                              f"{LIB}/ggml/backends0/libggml-hip.so"],
                tensile_dirs=[f"{LIB}/rocblas/4.4.1/library", f"{LIB}/hipblaslt/library"],
                llvm="/usr/lib/llvm-21", runtime="6.4"),
    "7.2": dict(fat_binaries=[f"{LIB}/librocsparse.so.1", f"{LIB}/librocsolver.so.0", f"{LIB}/librccl.so.1",
                              f"{LIB}/librocblas.so.5", f"{LIB}/libhipblaslt.so.1"],
                tensile_dirs=[f"{LIB}/rocblas/*/library", f"{LIB}/hipblaslt/library"],
                llvm="/usr/lib/llvm-22", runtime="7.2"),
}
FAT_BINARIES, TENSILE_DIRS, LLVM = [], [], ""  # the chosen stack's (main)
APPS = ["saxpy_compressed", "saxpy_generic"]  # tests/rocm/apps, built by the root's hipcc
BUNDLES_PER_FATBIN = 4  # bundles sampled per fat binary, spread over the section (all their entries)
SHOW = 10  # mismatches printed in full
# hipBLASLt's Kernels.so-000-gfx*.hsaco are 10-12 MB each (~1,300 kernels, 20 s of YAML on a loaded
# machine): per Tensile directory only the smallest BIG_FILES_PER_DIR files over BIG_FILE are kept
# (every processor still has its smaller .co files in the sample).
BIG_FILE, BIG_FILES_PER_DIR = 4 << 20, 2

# Metadata keys compared: comgr's key -> hipguard's inspect --json kernel key.
FIELDS = [".symbol", ".name", ".group_segment_fixed_size", ".private_segment_fixed_size", ".kernarg_segment_size",
          ".kernarg_segment_align", ".vgpr_count", ".agpr_count", ".sgpr_count", ".wavefront_size",
          ".max_flat_workgroup_size", ".uses_dynamic_stack"]

# The generic ISA HIP falls back to when no native code object fits (CLR hip_fatbin.cpp TargetGenericMap).
CLR_GENERIC = {
    **{p: "gfx9-generic" for p in ["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]},
    **{p: "gfx9-4-generic" for p in ["gfx942", "gfx950"]},
    **{p: "gfx10-1-generic" for p in ["gfx1010", "gfx1011", "gfx1012", "gfx1013"]},
    **{p: "gfx10-3-generic" for p in ["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"]},
    **{p: "gfx11-generic" for p in ["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152",
                                     "gfx1153"]},
    **{p: "gfx12-generic" for p in ["gfx1200", "gfx1201"]},
}
ISA_PREFIX = "amdgcn-amd-amdhsa--"


def log(*a):
    print(*a, flush=True)


# ---- reading the inputs ourselves (the sample and the bundle layout do not come from hipguard) ----

def hip_fatbin_section(path):
    """(file offset, size) of the .hip_fatbin section of a host ELF, or None."""
    with open(path, "rb") as f:
        eh = f.read(64)
        if eh[:4] != b"\x7fELF":
            return None
        shoff, = struct.unpack_from("<Q", eh, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", eh, 0x3A)
        f.seek(shoff)
        sh = f.read(shentsize * shnum)
        secs = [struct.unpack_from("<IIQQQQ", sh, i * shentsize) for i in range(shnum)]
        stroff, strsize = secs[shstrndx][4], secs[shstrndx][5]
        f.seek(stroff)
        names = f.read(strsize)
        for name, _t, _fl, _a, off, size in secs:
            if names[name:names.index(b"\0", name)] == b".hip_fatbin":
                return off, size
    return None


def bundle_at(f, pos, path):
    """The offload bundle at file offset pos (read through its headers only): dict with offset, size,
    compressed, entries [(id, offset in bundle, size)] (None when compressed)."""
    f.seek(pos)
    head = f.read(32)
    if head.startswith(b"__CLANG_OFFLOAD_BUNDLE__"):
        n, = struct.unpack_from("<Q", head, 24)
        entries, q = [], pos + 32
        for _ in range(n):
            f.seek(q)
            off, size, idlen = struct.unpack("<QQQ", f.read(24))
            entries.append((f.read(idlen).decode(), off, size))
            q += 24 + idlen
        size = max([q - pos] + [o + s for _, o, s in entries])
        return {"offset": pos, "size": size, "compressed": False, "entries": entries}
    if head.startswith(b"CCOB"):
        version, = struct.unpack_from("<H", head, 4)
        if version == 2:
            size, = struct.unpack_from("<I", head, 8)
        elif version >= 3:
            size, = struct.unpack_from("<Q", head, 8)
        else:
            raise SystemExit(f"{path}: CCOB v1 bundle at {pos:#x} has no total size; cannot walk the section")
        return {"offset": pos, "size": size, "compressed": True, "entries": None}
    raise SystemExit(f"{path}: no bundle magic at {pos:#x}")


def bundles_in(path):
    """Every offload bundle of a host ELF's .hip_fatbin, walked through the headers (the sections are
    1-2 GB; only hipguard reads them in full)."""
    sec = hip_fatbin_section(path)
    if not sec:
        return []
    out, p, end = [], sec[0], sec[0] + sec[1]
    with open(path, "rb") as f:
        while p < end:
            b = bundle_at(f, p, path)
            out.append(b)
            p += b["size"]
            while p < end:  # alignment padding between bundles
                f.seek(p)
                chunk = f.read(min(4096, end - p))
                skip = len(chunk) - len(chunk.lstrip(b"\0"))
                p += skip
                if skip < len(chunk):
                    break
    return out


def file_kind(path):
    with open(path, "rb") as f:
        magic = f.read(24)
    if magic.startswith(b"\x7fELF"):
        return "elf"
    if magic.startswith(b"__CLANG_OFFLOAD_BUNDLE__"):
        return "bundle"
    if magic.startswith(b"CCOB"):
        return "ccob"
    return "?"


def ccob_payload(path, b):
    """The uncompressed offload bundle inside a CCOB (zstd via the zstd command, or zlib), or None when
    this machine cannot decompress it."""
    with open(path, "rb") as f:
        f.seek(b["offset"])
        blob = f.read(b["size"])
    version, method = struct.unpack_from("<HH", blob, 4)
    header = {1: 20, 2: 24}.get(version, 32)
    data = blob[header:]
    if method == 0:
        import zlib
        return zlib.decompress(data)
    zstd = shutil.which("zstd")
    if method == 1 and zstd:
        return subprocess.run([zstd, "-dcq"], input=data, capture_output=True, check=True).stdout
    return None


def spread(items, k):
    """k items spread evenly over the list (first and last included): a fixed, deterministic sample."""
    if len(items) <= k:
        return list(range(len(items)))
    return sorted({round(i * (len(items) - 1) / (k - 1)) for i in range(k)})


def tensile_sample(root):
    """Per Tensile library directory, per processor tag, extension (.co, .hsaco) and container (ELF code
    object, offload bundle, compressed bundle): the smallest file (few of the big ones: BIG_FILE)."""
    out = []
    for d in TENSILE_DIRS:
        found = glob.glob(os.path.join(root, d))
        if len(found) != 1 or not os.path.isdir(found[0]):
            raise SystemExit(f"ROCm root has no {d} (or more than one)")
        full = found[0]
        groups = {}
        for name in sorted(os.listdir(full)):
            ext = os.path.splitext(name)[1]
            if ext not in (".co", ".hsaco"):
                continue
            stem = os.path.splitext(name)[0]
            tag = next((t for t in reversed(stem.replace("_", "-").split("-")) if t.startswith("gfx")), "?")
            if stem.endswith(("xnack+", "xnack-")):
                tag += ":" + stem[-6:]
            path = os.path.join(full, name)
            groups.setdefault((tag, ext, file_kind(path)), []).append(path)
        picked = [min(groups[key], key=lambda x: (os.path.getsize(x), x)) for key in sorted(groups)]
        big = sorted((p for p in picked if os.path.getsize(p) > BIG_FILE), key=lambda x: (os.path.getsize(x), x))
        out += [p for p in picked if p not in big[BIG_FILES_PER_DIR:]]
    return out


def corpus_sample(corpus):
    d = os.path.join(corpus, "aiter")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".co")) if os.path.isdir(d) else []


def apps_sample(apps):
    """hipcc 7 programs of the main build (tests/rocm): a compressed bundle and one with generic entries."""
    out = [os.path.join(apps, n) for n in APPS]
    missing = [p for p in out if not os.path.isfile(p)]
    if missing:
        raise SystemExit(f"no {', '.join(os.path.basename(m) for m in missing)} in {apps} (build the rocm_apps target)")
    return out


def own_sample(apps):
    """hipguard's own code objects, where the root's hipcc built them (tests/rocm/apps/lds_limits.hip, 7.2):
    static LDS at each limit, v4 to v6, generic, gfx1250, a compressed bundle."""
    return sorted(glob.glob(os.path.join(apps, "*lds_at_limit*")) + glob.glob(os.path.join(apps, "lds_mi355x.co")))


def fatbin_sample(root, extra=()):
    """(path, bundles, picked) for each fat binary: BUNDLES_PER_FATBIN bundles spread over it, all of
    them for the small programs in extra."""
    out = []
    for rel in FAT_BINARIES:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            raise SystemExit(f"ROCm root has no {rel}")
        bs = bundles_in(path)
        out.append((path, bs, spread(bs, BUNDLES_PER_FATBIN)))
    for path in extra:
        bs = bundles_in(path)
        out.append((path, bs, list(range(len(bs)))))
    return out


# ---- the oracles ----

class Comgr:
    """comgr_oracle built and run inside the root; one process answers every request."""

    def __init__(self, args, binds):
        exe = os.path.join(args.work, "comgr_oracle")
        src = os.path.join(args.source_dir, "tests/oracles/comgr_oracle.cpp")
        in_root = [os.path.join(args.source_dir, "scripts/in-rocm-root.sh"), "--stack", args.stack]
        os.makedirs(args.work, exist_ok=True)
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
            cmd = [*in_root, "--bind", args.source_dir, "--bind", args.work, "--",
                   f"{LLVM}/bin/clang++", "-std=c++17", "-O1", "-Wall", "-o", exe, src, "-lamd_comgr"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"cannot build comgr_oracle in the root: {r.stderr.strip()}")
        bind = []
        for b in sorted(set([args.work] + [d for d in binds if os.path.isdir(d)])):  # no corpus: nothing to bind
            bind += ["--bind", b]
        # comgr 3's on-disk cache (on by default, ~/.cache/comgr in the root) answers AMD_COMGR_ACTION_UNBUNDLE
        # of a compressed bundle from an earlier, different bundle with the same entry ID (seen with comgr
        # 7.0.2: saxpy_compressed's gfx1200 entry came back as a hipBLASLt Tensile kernel): off, every
        # answer computed from the bytes asked about.
        self.p = subprocess.Popen(in_root + bind + ["--env", "AMD_COMGR_CACHE=0", "--", exe], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, *fields):
        self.p.stdin.write("\t".join(str(f) for f in fields) + "\n")
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit("comgr_oracle ended early")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def readelf_kernels(readelf, path, tmpdir, offset=0, size=None):
    """amdhsa.kernels of every NT_AMDGPU_METADATA note llvm-readelf prints (YAML), in note order.
    readelf(path): the command line that prints a file's notes (readelf_command)."""
    import yaml
    if offset or size is not None:
        with open(path, "rb") as f:
            f.seek(offset)
            blob = f.read(size)
        path = os.path.join(tmpdir, "entry.co")
        with open(path, "wb") as f:
            f.write(blob)
    out = subprocess.run(readelf(path), capture_output=True, text=True, errors="replace")
    if out.returncode != 0:  # never "no kernels" for a file the oracle could not read
        raise SystemExit(f"{' '.join(readelf(path))}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    kernels, notes, doc = [], 0, None
    for line in out.stdout.splitlines():
        if doc is None:
            if line.strip() == "---":
                doc = []
            continue
        if line.strip() == "...":
            meta = yaml.load("\n".join(doc), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
            kernels += meta.get("amdhsa.kernels", [])
            notes += 1
            doc = None
        else:
            doc.append(line)
    return kernels, notes


def readelf_command(args, tmpdir):
    """path -> the argv of `llvm-readelf --notes path`: this machine's (--readelf), or the root's LLVM run
    inside the root (--stack 7.2: LLVM 22 knows every processor of its stack), files of the root seen
    at their paths there, the apps, the corpus and tmpdir bound at their own."""
    if args.readelf:
        return lambda path: [args.readelf, "--notes", path]
    binds = [a for d in (tmpdir, args.apps, args.corpus) if os.path.isdir(d) for a in ("--bind", d)]
    prefix = [os.path.join(args.source_dir, "scripts/in-rocm-root.sh"), "--stack", args.stack, *binds, "--",
              f"{LLVM}/bin/llvm-readelf", "--notes"]
    inside = lambda p: "/" + os.path.relpath(p, args.root) if p.startswith(args.root + os.sep) else p
    return lambda path: prefix + [inside(path)]


# ---- hipguard: one run per input, shared by the three tests ----

def hipguard_targets(hipguard):
    """Every target ID a device of hipguard's processor table can report (all its features +/-), generic
    processors left out. A device reports every feature it supports as + or -."""
    r = subprocess.run([hipguard, "targets"], capture_output=True, text=True)
    table = r.stdout.split("\nProcessors", 1)[1].splitlines()[2:]  # `hipguard targets`: its processor table
    out = []
    for row in table:
        cols = row.split()
        if not cols or not cols[0].startswith("gfx"):
            break
        name, xnack, sramecc = cols[0], cols[4] == "yes", cols[5] == "yes"  # NAME LDS KiB WAVE XNACK SRAMECC
        if "generic" in name:
            continue
        combos = [""]
        for feat, has in (("sramecc", sramecc), ("xnack", xnack)):
            if has:
                combos = [c + f":{feat}{s}" for c in combos for s in "+-"]
        out += [name + c for c in combos]
    return out


class Hipguard:
    """`hipguard inspect --json --target T...` (kernels and selection verdicts in one report), run once
    per input and kept in the work directory keyed by hipguard's binary and the input's path, size and
    mtime: the metadata, readelf and selection tests share it (the fat binaries are 1-2 GB each)."""

    def __init__(self, args):
        self.exe = args.hipguard
        self.dir = os.path.join(args.work, "cache")
        os.makedirs(self.dir, exist_ok=True)
        self.targets = hipguard_targets(self.exe)
        self.runs = self.cached = 0
        built = os.stat(self.exe).st_mtime
        for name in os.listdir(self.dir):  # reports written before this hipguard was built are stale
            if os.path.getmtime(os.path.join(self.dir, name)) < built:
                os.remove(os.path.join(self.dir, name))

    # The runtime the comgr queries model (hip64_queries, hip72_queries); main sets it from --stack.
    RUNTIME = "6.4"

    def _key(self, paths):
        st = os.stat(self.exe)
        parts = [os.path.realpath(self.exe), st.st_size, st.st_mtime_ns, self.targets, self.RUNTIME]
        for p in paths:
            ps = os.stat(p)
            parts.append([os.path.realpath(p), ps.st_size, ps.st_mtime_ns])
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]

    def files(self, paths, keep=None):
        """{path: hipguard's JSON file report} for these paths, from one hipguard run (or its cache), cut
        to what the tests read (trim); keep: {path: image indices} to keep (the others become None)."""
        cache = os.path.join(self.dir, self._key(paths) + (f"-{hashlib.sha256(json.dumps(sorted((p, sorted(i)) for p, i in keep.items())).encode()).hexdigest()[:12]}" if keep else "") + ".json")
        if os.path.exists(cache):
            with open(cache) as f:
                doc = json.load(f)
            self.cached += 1
        else:
            argv = [self.exe, "inspect", "--json", f"--runtime={self.RUNTIME}"] + [f"--target={t}" for t in self.targets] + list(paths)
            r = subprocess.run(argv, capture_output=True)
            try:
                doc = json.loads(r.stdout)
            except json.JSONDecodeError:
                raise SystemExit(f"hipguard inspect {paths[0]}...: no JSON (exit {r.returncode}): {r.stderr[:400]!r}")
            doc = trim(doc, paths, keep or {})
            tmp = f"{cache}.{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(doc, f)
            os.replace(tmp, cache)  # atomic: a test running beside this one reads all or nothing
            self.runs += 1
        if len(doc["files"]) != len(paths):
            raise SystemExit(f"hipguard reports {len(doc['files'])} files for {len(paths)} inputs")
        return dict(zip(paths, doc["files"]))

    def note(self):
        return f"hipguard runs {self.runs}, cached reports {self.cached}"


def trim(doc, paths, keep):
    """hipguard's report with only what the tests compare (the full one is 50-160 MB per fat binary)."""
    fields = [k[1:] for k in FIELDS]
    files = []
    for path, f in zip(paths, doc["files"]):
        images = []
        for i, img in enumerate(f["images"]):
            if path in keep and i not in keep[path]:
                images.append(None)
                continue
            images.append({"kind": img["kind"], "entries": img["entries"],
                           "code_objects": [{"entry": co.get("entry"),
                                             "kernels": [{k: kn.get(k) for k in fields} for kn in co["kernels"]]}
                                            for co in img["code_objects"]],
                           "verdicts": [{k: v.get(k) for k in ("target", "selected", "selection")}
                                        for v in img["verdicts"]]})
        files.append({"path": f.get("path"), "images": images})
    return {"files": files}


def norm(key, v):
    """A metadata value as comparable Python: ints, bools, strings."""
    if v is None:
        return None
    if key == ".uses_dynamic_stack":
        if isinstance(v, str):
            return {"true": True, "false": False, "1": True, "0": False}.get(v.lower(), v)
        return bool(v)
    if key in (".symbol", ".name"):
        return str(v)
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def compare_kernels(where, ours, theirs, oracle, stats, problems):
    """ours: hipguard's kernels (inspect --json); theirs: oracle kernels keyed by metadata key."""
    stats["code_objects"] += 1
    stats["kernels_oracle"] += len(theirs)
    stats["kernels_hipguard"] += len(ours)
    mine = {k.get("symbol"): k for k in ours}
    missing = []
    for tk in theirs:
        sym = norm(".symbol", tk.get(".symbol"))
        k = mine.pop(sym, None)
        if k is None:
            missing.append(sym)
            continue
        stats["kernels_compared"] += 1
        for key in FIELDS:
            want = norm(key, tk.get(key))
            if want is None:
                continue  # the key is absent from the metadata: nothing to compare
            got = norm(key, k.get(key[1:]))
            stats["fields_compared"] += 1
            if got != want:
                problems.append(f"{where}: kernel {sym}: {key}: hipguard {got!r}, {oracle} {want!r}")
    if missing:  # one line per code object: its count and the first kernel
        stats["kernels_missing"] += len(missing)
        problems.append(f"{where}: {len(missing)} of {len(theirs)} kernels: {oracle} has them, hipguard does not "
                        f"(first: {missing[0]})")
    for sym in mine:
        problems.append(f"{where}: kernel {sym}: hipguard has it, {oracle} does not")


def report(title, stats, problems, t0, known=()):
    log(f"{title}: " + ", ".join(f"{k} {v}" for k, v in stats.items()) + f", mismatches {len(problems)}"
        f", known differences {len(known)} ({time.time() - t0:.1f} s)")
    for k in known:
        log("  KNOWN " + k)
    for p in problems[:SHOW]:
        log("  MISMATCH " + p)
    if len(problems) > SHOW:
        log(f"  ... and {len(problems) - SHOW} more")
        by_kind = {}
        for p in problems:
            if "hipguard does not" in p:
                kind = "kernels the oracle has, hipguard does not"
            elif ": ." in p:
                kind = p.split(": ", 2)[-1].split(":")[0]
            else:
                kind = p.split(": ", 1)[-1][:100]
            by_kind[kind] = by_kind.get(kind, 0) + 1
        for kind, n in sorted(by_kind.items(), key=lambda x: -x[1])[:8]:
            log(f"  {n:6d} x {kind}")
    return 1 if problems else 0


def label_of(path, root):
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else os.path.basename(path)


def code_object_units(args, hg):
    """Every code object of the sample: dicts with label, path, offset, size (of the ELF, or of the
    compressed bundle holding it), entry (bundle entry ID, None for a plain ELF file), compressed, and
    hipguard's kernels (None: hipguard lists no such code object)."""
    units = []
    small = tensile_sample(args.root) + corpus_sample(args.corpus) + own_sample(args.apps)
    reports = hg.files(small)
    for f in small:
        kind = file_kind(f)
        images = reports[f]["images"]
        by_entry = {co["entry"]: co for img in images for co in img["code_objects"]}
        label = label_of(f, args.root)
        if kind == "elf":
            cos = [co for img in images for co in img["code_objects"]]
            units.append(dict(label=label, path=f, offset=0, size=os.path.getsize(f), entry=None, compressed=False,
                              kernels=cos[0]["kernels"] if len(cos) == 1 else None))
        elif kind == "bundle":
            with open(f, "rb") as fh:
                units += bundle_units(label, f, bundle_at(fh, 0, f), by_entry)
        elif kind == "ccob":
            units += ccob_units(label, f, {"offset": 0, "size": os.path.getsize(f)}, images[0], by_entry)
        else:
            raise SystemExit(f"{f}: neither ELF nor offload bundle")
    for path, bs, picked in fatbin_sample(args.root, apps_sample(args.apps)):
        images = hg.files([path], {path: picked})[path]["images"]
        if len(images) != len(bs):
            raise SystemExit(f"{path}: hipguard lists {len(images)} bundles, the section holds {len(bs)}")
        for i in picked:
            b = bs[i]
            by_entry = {co["entry"]: co for co in images[i]["code_objects"]}
            label = f"{os.path.basename(path)} bundle {i + 1}/{len(bs)}"
            if b["compressed"]:
                units += ccob_units(label, path, b, images[i], by_entry)
            else:
                units += bundle_units(label, path, b, by_entry)
    return units


def ccob_units(label, path, b, img, by_entry):
    """The code objects of a compressed bundle, by the entry IDs hipguard lists (the oracles unbundle them
    by these IDs: an ID hipguard got wrong comes back empty and shows as a mismatch)."""
    out = []
    for e in img["entries"]:
        if e["id"].startswith(("hip-amdgcn", "hipv4-amdgcn")) and e["size"]:
            co = by_entry.get(e["id"])
            out.append(dict(label=f"{label} {e['id']}", path=path, offset=b["offset"], size=b["size"], entry=e["id"],
                            compressed=True, kernels=co["kernels"] if co else None))
    return out


def bundle_units(label, path, b, by_entry):
    out = []
    for eid, off, size in b["entries"]:
        if not eid.startswith(("hip-amdgcn", "hipv4-amdgcn")) or size == 0:
            continue
        co = by_entry.get(eid)
        out.append(dict(label=f"{label} {eid}", path=path, offset=b["offset"] + off, size=size, entry=eid,
                        compressed=False, kernels=co["kernels"] if co else None))
    return out


def coverage(units, root):
    """One line per library: code objects and processors of the sample (what the counts cover)."""
    libs = {}
    for u in units:
        rel = label_of(u["path"], root)
        lib = next((d for d in ("rocblas", "hipblaslt") if f"/{d}/" in f"/{rel}"), None) or \
            ("aiter corpus" if "/aiter/" in u["path"] else os.path.basename(u["path"]))
        tags = [t for t in os.path.basename(rel).replace("_", "-").replace(".", "-").split("-") if t.startswith("gfx")]
        # the processor: the entry ID's, else the file name's (Tensile: last tag; aiter: first, gfx942_...)
        proc = u["entry"].split("--")[-1] if u["entry"] else \
            (tags[0] if lib == "aiter corpus" else tags[-1]) if tags else "?"
        n, procs = libs.get(lib, (0, set()))
        libs[lib] = (n + 1, procs | {proc.split(":")[0]})
    for lib, (n, procs) in sorted(libs.items()):
        log(f"  {lib}: {n} code objects, {len(procs)} processors ({' '.join(sorted(procs))})")


def mode_metadata(args):
    t0 = time.time()
    hg = Hipguard(args)
    units = code_object_units(args, hg)
    comgr = Comgr(args, [args.root, args.corpus, args.apps])
    stats = dict(files=len({u["path"] for u in units}), code_objects=0, compressed=0, kernels_oracle=0,
                 kernels_hipguard=0, kernels_compared=0, kernels_missing=0, fields_compared=0, unreadable_both=0)
    problems, known = [], []
    for u in units:
        if u["compressed"]:
            stats["compressed"] += 1
            ans = comgr.ask("meta_entry", u["path"], u["offset"], u["size"], u["entry"])
        else:
            ans = comgr.ask("meta", u["path"], u["offset"], u["size"])
        ours = u["kernels"]
        if "error" in ans:
            if ours is None:
                stats["unreadable_both"] += 1  # neither reads its metadata: agreement
            else:
                problems.append(f"{u['label']}: comgr: {ans['error']}, hipguard lists {len(ours)} kernels")
            continue
        if ours is None:
            problems.append(f"{u['label']}: hipguard reports no code object, comgr {len(ans['kernels'])} kernels")
            continue
        compare_kernels(u["label"], ours, ans["kernels"], "comgr", stats, problems)
    comgr.close()
    rc = report(f"comgr metadata vs hipguard inspect ({hg.note()})", stats, problems, t0, known)
    coverage(units, args.root)
    return rc


def mode_readelf(args):
    t0 = time.time()
    hg = Hipguard(args)
    units = code_object_units(args, hg)
    stats = dict(files=len({u["path"] for u in units}), code_objects=0, compressed=0, notes=0, kernels_oracle=0,
                 kernels_hipguard=0, kernels_compared=0, kernels_missing=0, fields_compared=0)
    problems, known, payloads = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        readelf = readelf_command(args, tmp)
        for u in units:
            path, off, size = u["path"], u["offset"], u["size"]
            if u["compressed"]:  # decompressed here (zstd/zlib), the entry cut from the inner bundle
                key = (path, off)
                if key not in payloads:
                    payloads[key] = ccob_payload(path, {"offset": off, "size": size})
                inner = payloads[key]
                if inner is None:
                    known.append(f"{u['label']}: not compared (no zstd command to decompress it)")
                    continue
                stats["compressed"] += 1
                path = os.path.join(tmp, "inner.bundle")
                with open(path, "wb") as f:
                    f.write(inner)
                with open(path, "rb") as f:
                    ent = {e: (o, s) for e, o, s in bundle_at(f, 0, path)["entries"]}
                if u["entry"] not in ent:
                    problems.append(f"{u['label']}: hipguard lists this entry, the decompressed bundle does not")
                    continue
                off, size = ent[u["entry"]]
            whole = off == 0 and size == os.path.getsize(path)
            ks, notes = readelf_kernels(readelf, path, tmp, 0 if whole else off, None if whole else size)
            stats["notes"] += notes
            if u["kernels"] is None:
                problems.append(f"{u['label']}: hipguard reports no code object, llvm-readelf {len(ks)} kernels")
                continue
            compare_kernels(u["label"], u["kernels"], ks, "llvm-readelf", stats, problems)
    name = os.path.basename(args.readelf) if args.readelf else f"{LLVM}/bin/llvm-readelf (ROCm {args.stack} root)"
    rc = report(f"{name} --notes vs hipguard inspect ({hg.note()})", stats, problems, t0,
                known)
    coverage(units, args.root)
    return rc


# ---- selection ----

def generic_isa(target):
    """The generic processor HIP falls back to for a device's target ID (CLR TargetGenericMap), or None."""
    return CLR_GENERIC.get(target.split(":")[0])


def hip64_queries(target):
    """What HIP 6.4 (the runtime in the root) asks for, in order, for a device reporting this target ID:
    its full ISA name; when that finds nothing, the generic ISA without features (uncompressed bundles:
    hip_code_object.cpp compares features only when the code object carries them; compressed: the bare
    generic ID)."""
    g = generic_isa(target)
    return [("native", ISA_PREFIX + target)] + ([("generic", ISA_PREFIX + g)] if g else [])


def hip72_queries(target):
    """What HIP 7.2 asks comgr for, in order, for a device reporting this target ID, for compressed and
    uncompressed bundles alike (CLR hip_fatbin.cpp ExtractFatBinaryUsingCOMGR: the native ISA name first,
    then TargetToGeneric, the generic ISA with the device's features re-appended, sramecc then xnack:
    gfx942:sramecc+:xnack- -> gfx9-4-generic:sramecc+:xnack-, which comgr rejects where the generic
    processor lacks a feature: gfx906 gets no gfx9-generic)."""
    g = generic_isa(target)
    features = target[len(target.split(":")[0]):]
    return [("native", ISA_PREFIX + target)] + ([("generic", ISA_PREFIX + g + features)] if g else [])


def mode_selection(args):
    t0 = time.time()
    hg = Hipguard(args)
    queries = hip72_queries if args.stack == "7.2" else hip64_queries
    comgr = Comgr(args, [args.root, args.apps])
    comgr_procs = {i[len(ISA_PREFIX):].split(":")[0] for i in comgr.ask("isas")["isas"]}
    targets = [t for t in hg.targets if t.split(":")[0] in comgr_procs]
    stats = dict(fat_binaries=0, bundles=0, compressed=0, targets=len(targets), pairs=0, native=0, generic=0,
                 none=0)
    problems = []
    hipblaslt = os.path.join(args.root, TENSILE_DIRS[1])
    ccob_files = sorted(f for f in tensile_sample(args.root) if f.startswith(hipblaslt) and file_kind(f) == "ccob")
    ccob_reports = hg.files(tensile_sample(args.root) + corpus_sample(args.corpus))  # the metadata tests' run
    work = [(path, bs, picked, hg.files([path], {path: picked})[path]["images"]) for path, bs, picked in
            fatbin_sample(args.root, apps_sample(args.apps))]
    work += [(f, [{"offset": 0, "size": os.path.getsize(f), "compressed": True, "entries": None}], [0],
              ccob_reports[f]["images"]) for f in ccob_files]
    for path, bs, picked, images in work:
        stats["fat_binaries"] += 1
        if len(images) != len(bs):
            raise SystemExit(f"{path}: hipguard lists {len(images)} bundles, the file holds {len(bs)}")
        for i in picked:
            b, img = bs[i], images[i]
            stats["bundles"] += 1
            where = f"{label_of(path, args.root)} bundle {i + 1}/{len(bs)}"
            verdicts = {v["target"]: v for v in img["verdicts"]}
            unbundled = {}  # a compressed bundle's entry for each ISA asked: comgr's answer
            if b["compressed"]:
                stats["compressed"] += 1
                ids = [e["id"] for e in img["entries"]]
                hashes = {}  # every entry's bytes as comgr unbundles them, to name what a query returns
                for eid in ids:
                    for it in comgr.ask("unbundle", path, b["offset"], b["size"], eid).get("items", []):
                        if it["size"]:
                            hashes.setdefault(it["hash"], eid)
                # comgr matches no entry of another processor: the ISAs of processors no entry names are
                # asked in one UNBUNDLE (each decompresses the bundle), and must come back empty; if one
                # does not (an entry hipguard did not list), each is asked on its own below.
                present = {eid.split("--")[-1].split(":")[0] for eid in ids}
                absent = sorted({isa for t in targets for _, isa in queries(t)
                                 if isa[len(ISA_PREFIX):].split(":")[0] not in present})
                if absent:
                    a = comgr.ask("unbundle", path, b["offset"], b["size"], *["hipv4-" + isa for isa in absent])
                    if "error" not in a and not [it for it in a.get("items", []) if it["size"]]:
                        unbundled.update(dict.fromkeys(absent))
            else:
                by_offset = {off: eid for eid, off, _ in b["entries"]}
                isas = sorted({isa for t in targets for _, isa in queries(t)})
                ans = comgr.ask("lookup", path, b["offset"], b["size"], *isas)
                if "error" in ans:
                    problems.append(f"{where}: comgr: {ans['error']}")
                    continue
                found = {f["isa"]: by_offset.get(f["offset"], f"<offset {f['offset']}>") for f in ans["found"]
                         if f["size"]}
            for t in targets:
                stats["pairs"] += 1
                want, how = None, "none"
                for kind, isa in queries(t):
                    if b["compressed"]:
                        if isa not in unbundled:  # one UNBUNDLE per ISA and bundle: targets share queries
                            a = comgr.ask("unbundle", path, b["offset"], b["size"], "hipv4-" + isa)
                            items = [it for it in a.get("items", []) if it["size"]]
                            unbundled[isa] = hashes.get(items[0]["hash"], f"<unlisted {items[0]['hash']}>") \
                                if items else None
                        hit = unbundled[isa]
                    else:
                        hit = found.get(isa)
                    if hit:
                        want, how = hit, kind
                        break
                v = verdicts.get(t)
                got = v.get("selected") if v else None
                got_how = v.get("selection") if v else None
                if got_how == "spir-v" or not got:
                    got = None
                stats[how] += 1
                if got != want:
                    problems.append(f"{where} {t}: hipguard {got!r} ({got_how}), comgr as HIP {args.stack} asks "
                                    f"{want!r} ({how})")
    comgr.close()
    return report(f"comgr selection (HIP {args.stack} queries) vs hipguard ({hg.note()})", stats, problems, t0)


def main():
    global FAT_BINARIES, TENSILE_DIRS, LLVM
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mode", choices=["metadata", "readelf", "selection"])
    ap.add_argument("--hipguard", required=True)
    ap.add_argument("--stack", choices=sorted(STACKS), default="6.4", help="which ROCm root (scripts/rocm-root.sh)")
    ap.add_argument("--root", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--apps", required=True, help="the root's hipcc programs of tests/rocm (saxpy_compressed, ...)")
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work", required=True, help="directory for the built comgr oracle and hipguard's reports")
    ap.add_argument("--readelf", default="", help="this machine's llvm-readelf (6.4; default: llvm-readelf-16); "
                    "7.2 uses the root's")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.root, ".hipguard-root")):
        print(f"SKIP: no ROCm {args.stack} root at {args.root} (scripts/rocm-root.sh --stack {args.stack} builds it)")
        return SKIP
    stack = STACKS[args.stack]
    FAT_BINARIES, TENSILE_DIRS, LLVM = stack["fat_binaries"], stack["tensile_dirs"], stack["llvm"]
    Hipguard.RUNTIME = stack["runtime"]
    args.root, args.corpus = os.path.realpath(args.root), os.path.realpath(args.corpus)
    args.work, args.apps = os.path.realpath(args.work), os.path.realpath(args.apps)
    if args.mode == "readelf":
        if args.stack == "6.4":
            args.readelf = args.readelf or shutil.which("llvm-readelf-16") or shutil.which("llvm-readelf") or ""
            if not args.readelf:
                print("SKIP: no llvm-readelf on this machine")
                return SKIP
        return mode_readelf(args)
    return mode_metadata(args) if args.mode == "metadata" else mode_selection(args)


if __name__ == "__main__":
    sys.exit(main())
