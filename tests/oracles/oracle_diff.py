#!/usr/bin/env python3
# Differential tests: hipguard's kernel metadata and bundle selection against AMD's own readers
# (comgr 3 in the ROCm root via comgr_oracle.cpp, and llvm-readelf --notes) on a fixed sample of the
# root's real libraries. Modes: metadata (Oracle.ComgrMetadata), readelf (Oracle.ReadelfNotes),
# selection (Oracle.ComgrSelection). Exit 0: no mismatch; 1: mismatches (printed); 77: skipped.
import argparse
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
FAT_BINARIES = [f"{LIB}/librocsparse.so.1", f"{LIB}/librocsolver.so.0", f"{LIB}/ggml/backends0/libggml-hip.so"]
TENSILE_DIRS = [f"{LIB}/rocblas/4.4.1/library", f"{LIB}/hipblaslt/library"]
BUNDLES_PER_FATBIN = 4  # bundles sampled per fat binary, spread over the section (all their entries)
SHOW = 10  # mismatches printed in full

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


def bundles_in(path):
    """Every offload bundle of a host ELF's .hip_fatbin: dicts with offset (in the file), size,
    compressed, entries [(id, offset in bundle, size)] (uncompressed only)."""
    sec = hip_fatbin_section(path)
    if not sec:
        return []
    with open(path, "rb") as f:
        f.seek(sec[0])
        data = f.read(sec[1])
    out, p = [], 0
    while p < len(data):
        if data.startswith(b"__CLANG_OFFLOAD_BUNDLE__", p):
            n, = struct.unpack_from("<Q", data, p + 24)
            q, entries = p + 32, []
            for _ in range(n):
                off, size, idlen = struct.unpack_from("<QQQ", data, q)
                entries.append((data[q + 24:q + 24 + idlen].decode(), off, size))
                q += 24 + idlen
            size = max([q - p] + [o + s for _, o, s in entries])
            out.append({"offset": sec[0] + p, "size": size, "compressed": False, "entries": entries})
        elif data.startswith(b"CCOB", p):
            version, = struct.unpack_from("<H", data, p + 4)
            if version == 2:
                size, = struct.unpack_from("<I", data, p + 8)
            elif version >= 3:
                size, = struct.unpack_from("<Q", data, p + 8)
            else:
                raise SystemExit(f"{path}: CCOB v1 bundle at {p:#x} has no total size; cannot walk the section")
            out.append({"offset": sec[0] + p, "size": size, "compressed": True, "entries": None})
        else:
            raise SystemExit(f"{path}: no bundle magic at .hip_fatbin+{p:#x}")
        p += size
        while p < len(data) and data[p] == 0:  # alignment padding between bundles
            p += 1
    return out


def spread(items, k):
    """k items spread evenly over the list (first and last included): a fixed, deterministic sample."""
    if len(items) <= k:
        return list(range(len(items)))
    return sorted({round(i * (len(items) - 1) / (k - 1)) for i in range(k)})


def tensile_sample(root):
    """Per Tensile library directory, per processor tag and kind (.co, .hsaco): the smallest file and the
    first by name."""
    out = []
    for d in TENSILE_DIRS:
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            raise SystemExit(f"ROCm root has no {d}")
        groups = {}
        for name in sorted(os.listdir(full)):
            ext = os.path.splitext(name)[1]
            if ext not in (".co", ".hsaco"):
                continue
            stem = os.path.splitext(name)[0]
            tag = next((t for t in reversed(stem.replace("_", "-").split("-")) if t.startswith("gfx")), "?")
            if stem.endswith(("xnack+", "xnack-")):
                tag += ":" + stem[-6:]
            groups.setdefault((tag, ext), []).append(os.path.join(full, name))
        for key in sorted(groups):
            files = groups[key]
            for f in dict.fromkeys([files[0], min(files, key=lambda x: (os.path.getsize(x), x))]):
                out.append(f)
    return out


def corpus_sample(corpus):
    d = os.path.join(corpus, "aiter")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".co")) if os.path.isdir(d) else []


def fatbin_sample(root):
    """(path, [(bundle index, bundle)]) for each fat binary: BUNDLES_PER_FATBIN bundles spread over it."""
    out = []
    for rel in FAT_BINARIES:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            raise SystemExit(f"ROCm root has no {rel}")
        bs = bundles_in(path)
        out.append((path, bs, spread(bs, BUNDLES_PER_FATBIN)))
    return out


# ---- the oracles ----

class Comgr:
    """comgr_oracle built and run inside the root; one process answers every request."""

    def __init__(self, args, binds):
        exe = os.path.join(args.work, "comgr_oracle")
        src = os.path.join(args.source_dir, "tests/oracles/comgr_oracle.cpp")
        in_root = os.path.join(args.source_dir, "scripts/in-rocm-root.sh")
        os.makedirs(args.work, exist_ok=True)
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
            cmd = [in_root, "--bind", args.source_dir, "--bind", args.work, "--",
                   "/usr/lib/llvm-21/bin/clang++", "-std=c++17", "-O1", "-Wall", "-o", exe, src, "-lamd_comgr"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"cannot build comgr_oracle in the root: {r.stderr.strip()}")
        bind = []
        for b in sorted(set([args.work] + binds)):
            bind += ["--bind", b]
        self.p = subprocess.Popen([in_root] + bind + ["--", exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

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
    """amdhsa.kernels of every NT_AMDGPU_METADATA note llvm-readelf prints (YAML), in note order."""
    import yaml
    if offset or size is not None:
        with open(path, "rb") as f:
            f.seek(offset)
            blob = f.read(size)
        path = os.path.join(tmpdir, "entry.co")
        with open(path, "wb") as f:
            f.write(blob)
    out = subprocess.run([readelf, "--notes", path], capture_output=True, text=True, errors="replace")
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


# ---- hipguard ----

def hipguard_json(hipguard, args):
    r = subprocess.run([hipguard] + args, capture_output=True)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"hipguard {' '.join(args[:3])}...: no JSON (exit {r.returncode}): {r.stderr[:400]!r}")


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
    for tk in theirs:
        sym = norm(".symbol", tk.get(".symbol"))
        k = mine.pop(sym, None)
        if k is None:
            problems.append(f"{where}: kernel {sym}: {oracle} has it, hipguard does not")
            stats["kernels_missing"] = stats.get("kernels_missing", 0) + 1
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
    for sym in mine:
        problems.append(f"{where}: kernel {sym}: hipguard has it, {oracle} does not")
    missing = [p for p in problems if p.startswith(where + ": kernel ") and p.endswith(", hipguard does not")]
    if len(missing) > 1:  # one line per code object: its count and the first kernel
        for p in missing:
            problems.remove(p)
        problems.append(f"{where}: {len(missing)} of {len(theirs)} kernels: {oracle} has them, hipguard does not "
                        f"(first: {missing[0].split(': kernel ', 1)[1].split(': ')[0]})")


def report(title, stats, problems, t0):
    log(f"{title}: " + ", ".join(f"{k} {v}" for k, v in stats.items()) + f", mismatches {len(problems)}"
        f" ({time.time() - t0:.1f} s)")
    for p in problems[:SHOW]:
        log("  MISMATCH " + p)
    if len(problems) > SHOW:
        log(f"  ... and {len(problems) - SHOW} more")
        by_kind = {}
        for p in problems:
            kind = p.split(": ", 2)[-1].split(":")[0] if ": ." in p else p.split(": ")[-1]
            by_kind[kind] = by_kind.get(kind, 0) + 1
        for kind, n in sorted(by_kind.items(), key=lambda x: -x[1])[:8]:
            log(f"  {n:6d} x {kind}")
    return 1 if problems else 0


def code_object_units(args):
    """Every code object of the sample: (label, path, offset, size, hipguard kernels)."""
    units, fat = [], fatbin_sample(args.root)
    for f in tensile_sample(args.root) + corpus_sample(args.corpus):
        doc = hipguard_json(args.hipguard, ["inspect", "--json", f])
        cos = [co for img in doc["files"][0]["images"] for co in img["code_objects"]]
        units.append((os.path.relpath(f, args.root) if f.startswith(args.root) else os.path.basename(f), f, 0,
                      os.path.getsize(f), cos[0]["kernels"] if len(cos) == 1 else None))
    for path, bs, picked in fat:
        doc = hipguard_json(args.hipguard, ["inspect", "--json", path])
        images = doc["files"][0]["images"]
        if len(images) != len(bs):
            raise SystemExit(f"{path}: hipguard lists {len(images)} bundles, the section holds {len(bs)}")
        for i in picked:
            b = bs[i]
            if b["compressed"]:
                continue  # entries of compressed bundles: the selection mode checks those through comgr
            by_entry = {co["entry"]: co for co in images[i]["code_objects"]}
            for eid, off, size in b["entries"]:
                if not eid.startswith(("hip-amdgcn", "hipv4-amdgcn")) or size == 0:
                    continue
                co = by_entry.get(eid)
                units.append((f"{os.path.basename(path)} bundle {i + 1}/{len(bs)} {eid}", path, b["offset"] + off,
                              size, co["kernels"] if co else None))
    return units


def mode_metadata(args):
    t0 = time.time()
    units = code_object_units(args)
    comgr = Comgr(args, [args.root, args.corpus])
    stats = dict(files=len({u[1] for u in units}), code_objects=0, kernels_oracle=0, kernels_hipguard=0,
                 kernels_compared=0, fields_compared=0)
    problems = []
    for label, path, off, size, ours in units:
        ans = comgr.ask("meta", path, off, size)
        if "error" in ans:
            problems.append(f"{label}: comgr: {ans['error']} (hipguard: {len(ours or [])} kernels)")
            continue
        if ours is None:
            problems.append(f"{label}: hipguard reports no code object")
            continue
        compare_kernels(label, ours, ans["kernels"], "comgr", stats, problems)
    comgr.close()
    return report("comgr metadata vs hipguard inspect", stats, problems, t0)


def mode_readelf(args):
    t0 = time.time()
    units = code_object_units(args)
    stats = dict(files=len({u[1] for u in units}), code_objects=0, notes=0, kernels_oracle=0, kernels_hipguard=0,
                 kernels_compared=0, fields_compared=0)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, off, size, ours in units:
            whole = off == 0 and size == os.path.getsize(path)
            ks, notes = readelf_kernels(args.readelf, path, tmp, 0 if whole else off, None if whole else size)
            stats["notes"] += notes
            if ours is None:
                problems.append(f"{label}: hipguard reports no code object")
                continue
            theirs = [{k: v for k, v in k.items()} for k in ks]
            compare_kernels(label, ours, theirs, "llvm-readelf", stats, problems)
    return report(f"{os.path.basename(args.readelf)} --notes vs hipguard inspect", stats, problems, t0)


# ---- selection ----

def device_targets(hipguard, isas):
    """Every target ID a device of hipguard's processor table can report (all its features +/-), for the
    processors comgr knows. A device reports every feature it supports as + or -."""
    r = subprocess.run([hipguard, "targets"], capture_output=True, text=True)
    table = r.stdout.split("\nProcessors", 1)[1].splitlines()[2:]  # `hipguard targets`: its processor table
    comgr_procs = {i[len(ISA_PREFIX):].split(":")[0] for i in isas}
    out = []
    for row in table:
        cols = row.split()
        if not cols or not cols[0].startswith("gfx"):
            break
        name, xnack, sramecc = cols[0], cols[4] == "yes", cols[5] == "yes"  # NAME LDS KiB WAVE XNACK SRAMECC
        if "generic" in name or name not in comgr_procs:
            continue
        p = {"name": name, "xnack": xnack, "sramecc": sramecc}
        combos = [""]
        for feat in ("sramecc", "xnack"):
            if p.get(feat):
                combos = [c + f":{feat}{s}" for c in combos for s in "+-"]
        out += [p["name"] + c for c in combos]
    return out


def generic_of(target):
    proc, *feats = target.split(":")
    g = CLR_GENERIC.get(proc)
    return ":".join([g] + feats) if g else None


def mode_selection(args):
    t0 = time.time()
    comgr = Comgr(args, [args.root])
    isas = comgr.ask("isas")["isas"]
    targets = device_targets(args.hipguard, isas)
    stats = dict(fat_binaries=0, bundles=0, compressed=0, targets=len(targets), pairs=0, native=0, generic=0,
                 none=0)
    problems = []
    for path, bs, picked in fatbin_sample(args.root):
        stats["fat_binaries"] += 1
        argv = ["check", "--json"]
        for t in targets:
            argv += ["--target", t]
        doc = hipguard_json(args.hipguard, argv + [path])
        images = doc["files"][0]["images"]
        if len(images) != len(bs):
            raise SystemExit(f"{path}: hipguard lists {len(images)} bundles, the section holds {len(bs)}")
        for i in picked:
            b, img = bs[i], images[i]
            stats["bundles"] += 1
            where = f"{os.path.basename(path)} bundle {i + 1}/{len(bs)}"
            verdicts = {v["target"]: v for v in img["verdicts"]}
            if b["compressed"]:
                stats["compressed"] += 1
            by_offset = {off: eid for eid, off, _ in (b["entries"] or [])}
            hashes = None
            for t in targets:
                stats["pairs"] += 1
                native, generic = ISA_PREFIX + t, (ISA_PREFIX + generic_of(t)) if generic_of(t) else None
                want, how = None, "none"
                if not b["compressed"]:
                    asks = [native] + ([generic] if generic else [])
                    ans = comgr.ask("lookup", path, b["offset"], b["size"], *asks)
                    if "error" in ans:
                        problems.append(f"{where} {t}: comgr: {ans['error']}")
                        continue
                    for f, kind in zip(ans["found"], ["native", "generic"]):
                        if f["size"]:
                            want, how = by_offset.get(f["offset"], f"<offset {f['offset']}>"), kind
                            break
                else:
                    if hashes is None:  # every entry's bytes as comgr unbundles them, to name what it returns
                        ids = img_entry_ids(img)
                        hashes = {}
                        for eid in ids:
                            a = comgr.ask("unbundle", path, b["offset"], b["size"], eid)
                            for it in a.get("items", []):
                                hashes.setdefault(it["hash"], eid)
                    for ask, kind in [(native, "native"), (generic, "generic")]:
                        if not ask:
                            continue
                        a = comgr.ask("unbundle", path, b["offset"], b["size"], "hipv4-" + ask)
                        items = [it for it in a.get("items", []) if it["size"]]
                        if items:
                            want, how = hashes.get(items[0]["hash"], f"<unlisted {items[0]['hash']}>"), kind
                            break
                v = verdicts.get(t)
                got = v.get("selected") if v else None
                got_how = v.get("selection") if v else None
                if got_how == "spir-v" or not got:
                    got = None
                stats[how] += 1
                if got != want:
                    problems.append(f"{where} {t}: hipguard {got!r} ({got_how}), comgr {want!r} ({how})")
    comgr.close()
    return report("comgr selection vs hipguard check", stats, problems, t0)


def img_entry_ids(img):
    return [e["id"] for e in img.get("entries", [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mode", choices=["metadata", "readelf", "selection"])
    ap.add_argument("--hipguard", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work", required=True, help="directory for the built comgr oracle")
    ap.add_argument("--readelf", default="")
    args = ap.parse_args()
    args.root, args.corpus = os.path.realpath(args.root), os.path.realpath(args.corpus)
    args.work = os.path.realpath(args.work)
    if not os.path.isfile(os.path.join(args.root, ".hipguard-root")):
        print(f"SKIP: no ROCm root at {args.root} (scripts/rocm-root.sh builds it)")
        return SKIP
    if args.mode == "readelf":
        args.readelf = args.readelf or shutil.which("llvm-readelf-16") or shutil.which("llvm-readelf") or ""
        if not args.readelf:
            print("SKIP: no llvm-readelf on this machine")
            return SKIP
        return mode_readelf(args)
    return mode_metadata(args) if args.mode == "metadata" else mode_selection(args)


if __name__ == "__main__":
    sys.exit(main())
