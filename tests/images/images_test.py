#!/usr/bin/env python3
"""hipguard on container images made offline with Debian's umoci and skopeo from files of the ROCm 7.2
root: an OCI image layout, the same as an OCI archive, a docker-save archive and with zstd layers, and a
second layer that whites out rocBLAS's gfx90a Tensile files; then damaged images (bad digest, missing
blob, index not JSON, a member leaving the image, a whiteout of nothing, a truncated layer).

A Python environment: a site-packages tree vendoring a HIP library under a hashed name, and its wheel.

images_test.py CASE --root R --apps DIR --cli hipguard --work DIR
Exit 0 passed, 1 failed, 77 skipped (one line says why: no ROCm 7.2 root).
The verdict on an image must equal the verdict on its files unpacked and checked as a directory.
"""
import argparse
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

A = None
FAILED = []
LIBRARY = "usr/lib/x86_64-linux-gnu/rocblas/5/library"
TARGETS = ["gfx90a", "gfx942"]


def expect(ok, what):
    if not ok:
        FAILED.append(what)
        print("FAIL:", what)
    return ok


def run(*cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def check(*args):
    """hipguard check --json ARGS: (exit status, report)."""
    r = subprocess.run([A.cli, "check", "--json", *args], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"hipguard check {' '.join(args)}: exit {r.returncode}: {r.stderr[-2000:]}")
    return r.returncode, json.loads(r.stdout)


# ---- the images ---------------------------------------------------------------------------------------

def rootfs_base(dest):
    """rocBLAS's Tensile code objects for gfx90a and gfx942 (no .dat: the kernel databases are checked
    below directory arguments only), two hipcc programs and a file without GPU code."""
    lib = os.path.join(dest, LIBRARY)
    os.makedirs(lib)
    src = glob.glob(os.path.join(A.root, "usr/lib/x86_64-linux-gnu/rocblas/*/library"))[0]
    for p in ("gfx90a", "gfx942"):
        files = sorted(glob.glob(os.path.join(src, f"Kernels.so-000-{p}*.hsaco")))
        files += sorted(glob.glob(os.path.join(src, f"*_{p}.co")), key=os.path.getsize)[:10]
        for f in files:
            shutil.copy(f, lib)
    os.makedirs(os.path.join(dest, "usr/bin"))
    for app in ("vector_add_gfx90a", "vector_add_multi"):
        shutil.copy(os.path.join(A.apps, app), os.path.join(dest, "usr/bin"))
    os.makedirs(os.path.join(dest, "etc"))
    with open(os.path.join(dest, "etc/motd"), "w") as f:
        f.write("no GPU code here\n")


RUN_PROGRAM = "usr/libexec/rocm/librocblas5-bench/rocblas-bench"  # in the 7.2 root
MULTIARCH = "usr/lib/x86_64-linux-gnu"


def rootfs_run(dest):
    """A machine laid out as Debian's images are (/lib a symlink to usr/lib, libraries as symlinks to
    their versioned files) running rocBLAS 5's benchmark, its program found on PATH; libamdhip64 in a
    directory /etc/ld.so.conf.d names, libgfortran in one only LD_LIBRARY_PATH names, and rocBLAS itself
    (and what libamdhip64 needs) left out: those are what a check of the image as one machine must name."""
    os.makedirs(os.path.join(dest, MULTIARCH))
    os.symlink("usr/lib", os.path.join(dest, "lib"))
    for name in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libquadmath.so.0",
                 "ld-linux-x86-64.so.2"):
        src = os.path.join(A.root, MULTIARCH, name)
        real = os.path.basename(os.path.realpath(src))
        shutil.copy(src, os.path.join(dest, MULTIARCH, real))
        if real != name:
            os.symlink(real, os.path.join(dest, MULTIARCH, name))
    for d, name in (("opt/rocm/lib", "libamdhip64.so.7"), ("opt/env", "libgfortran.so.5")):
        os.makedirs(os.path.join(dest, d))
        shutil.copy(os.path.join(A.root, MULTIARCH, name), os.path.join(dest, d, name))
    os.makedirs(os.path.join(dest, "etc/ld.so.conf.d"))
    with open(os.path.join(dest, "etc/ld.so.conf"), "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    with open(os.path.join(dest, "etc/ld.so.conf.d/rocm.conf"), "w") as f:
        f.write("/opt/rocm/lib\n")
    os.makedirs(os.path.join(dest, "usr/bin"))
    shutil.copy(os.path.join(A.root, RUN_PROGRAM), os.path.join(dest, "usr/bin"))


def umoci(*args):
    rootless = [] if os.geteuid() == 0 else ["--rootless"]
    return run("umoci", *args[:1], *rootless, *args[1:]) if args[0] in ("unpack",) else run("umoci", *args)


def layer(layout, base, tag, change, tree):
    """A layer on `layout:base` (or a new image when base is None) tagged `tag`: `change` edits the root
    file system, which is kept as it is then in `tree` (the image's files unpacked)."""
    bundle = os.path.join(A.work, "bundle")
    if base is None:
        umoci("init", "--layout", layout)
        umoci("new", "--image", f"{layout}:{tag}")
        base = tag
    umoci("unpack", "--image", f"{layout}:{base}", bundle)
    change(os.path.join(bundle, "rootfs"))
    umoci("repack", "--image", f"{layout}:{tag}", bundle)
    shutil.copytree(os.path.join(bundle, "rootfs"), tree, symlinks=True)
    shutil.rmtree(bundle)


def remove_gfx90a(rootfs):
    for f in glob.glob(os.path.join(rootfs, LIBRARY, "*gfx90a*")):
        os.remove(f)


def inputs_key():
    """What the images are made of: the root, the two programs and this script (a stamp keeps it)."""
    parts = [os.path.realpath(A.root), os.path.realpath(__file__)]
    for p in [__file__] + [os.path.join(A.apps, a) for a in ("vector_add_gfx90a", "vector_add_multi")]:
        st = os.stat(p)
        parts.append(f"{p}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def build():
    """The images, once per build directory and inputs (a stamp says they are complete, and of what)."""
    stamp = os.path.join(A.work, "complete")
    if os.path.exists(stamp) and open(stamp).read() == inputs_key():
        return
    shutil.rmtree(A.work, ignore_errors=True)
    os.makedirs(A.work)
    w = lambda *p: os.path.join(A.work, *p)
    layer(w("layout"), None, "base", rootfs_base, w("tree-base"))
    # The second layer: rocBLAS's gfx90a files removed (whiteouts), as `RUN rm` in a Dockerfile.
    layer(w("layout"), "base", "top", remove_gfx90a, w("tree-top"))
    for tag in ("base", "top"):
        run("skopeo", "copy", "-q", f"oci:{w('layout')}:{tag}", f"oci:{w('oci-' + tag)}:{tag}")
    run("skopeo", "copy", "-q", f"oci:{w('layout')}:top", f"docker-archive:{w('docker-top.tar')}:hg/top:1")
    run("gzip", "-1", "-k", "-f", w("docker-top.tar"))  # as `docker save IMAGE | gzip` stores it
    run("skopeo", "copy", "-q", "--dest-compress", "--dest-compress-format", "zstd", f"oci:{w('layout')}:top",
        f"oci:{w('zstd-top')}:top")
    with tarfile.open(w("oci-top.tar"), "w") as t:
        for name in sorted(os.listdir(w("oci-top"))):
            t.add(w("oci-top", name), arcname=name)
    # The image as one machine: a program its config starts, with its Env.
    layer(w("run"), None, "run", rootfs_run, w("tree-run"))
    umoci("config", "--image", w("run") + ":run", "--config.entrypoint", "rocblas-bench",
          "--config.env", "LD_LIBRARY_PATH=/opt/env")
    open(stamp, "w").write(inputs_key())


# ---- verdicts -----------------------------------------------------------------------------------------

def relative(path, prefixes):
    for p in prefixes:
        if path.startswith(p):
            return path[len(p):].lstrip("/")
    return path


def verdict(doc, prefixes):
    """What a report says per file, named relative to the image or the tree: each image's verdicts and
    diagnostic codes, the file's own codes, and each kernel library's summary."""
    files = {}
    for f in doc["files"]:
        imgs = [(img["location"], img["ok"], tuple((v["target"], v["can_run"], v.get("selected")) for v in img["verdicts"]),
                 tuple(sorted(d["code"] for d in img["diagnostics"]))) for img in f["images"]]
        files[relative(f["path"], prefixes)] = (tuple(imgs), tuple(sorted(d["code"] for d in f["diagnostics"])))
    libraries = {relative(l["name"], prefixes): (l["files"], tuple(l["built_for"]),
                                                 tuple((t["target"], t["can_run"], t["code_objects"], t["other_target"])
                                                       for t in l["targets"])) for l in doc["libraries"]}
    return files, libraries


def same_as_tree(image, tree, label):
    for target in TARGETS:
        rc_i, doc_i = check("--target", target, image)
        rc_t, doc_t = check("--target", target, tree)
        vi, vt = verdict(doc_i, [image + "!"]), verdict(doc_t, [tree])
        expect(rc_i == rc_t, f"{label} on {target}: exit {rc_i}, its files unpacked: {rc_t}")
        expect(vi == vt, f"{label} on {target}: the image's verdict differs from its unpacked files':\n"
                         f"  image: {vi}\n  tree:  {vt}")
        expect(len(vi[0]) > 1, f"{label} on {target}: no file checked")


def codes(doc):
    return [d["code"] for f in doc["files"] for d in f["diagnostics"]] + \
           [d["code"] for f in doc["files"] for img in f["images"] for d in img["diagnostics"]]


# ---- cases --------------------------------------------------------------------------------------------

def case_Build():
    """The images (the other cases' fixture)."""
    expect(os.path.exists(os.path.join(A.work, "complete")), "the images were not made")


def case_ImageEqualsItsFiles():
    """An OCI layout, the same as an OCI archive, a docker-save archive (plain and gzipped) and with zstd
    layers: each verdict equals the verdict on the image's files unpacked (umoci unpack) and checked as a
    directory."""
    w = lambda *p: os.path.join(A.work, *p)
    same_as_tree(w("oci-base"), w("tree-base"), "base (OCI layout)")
    for image in ("oci-top", "oci-top.tar", "docker-top.tar", "docker-top.tar.gz", "zstd-top"):
        same_as_tree(w(image), w("tree-top"), f"top ({image})")
    bad = subprocess.run([A.cli, "check", "--platform", "amd64", w("oci-base")], capture_output=True, text=True)
    expect(bad.returncode == 2 and "--platform" in bad.stderr, f"--platform amd64: exit {bad.returncode}")
    rc, doc = check("--target", "gfx942", w("oci-base"))
    names = sorted(f["path"] for f in doc["files"])
    expect(w("oci-base") + "!usr/bin/vector_add_multi" in names, f"base: files {names[:5]}...")
    expect(not any("motd" in n for n in names), "a file without GPU code is no finding")


def case_WhiteoutChangesTheVerdict():
    """The second layer whites out rocBLAS's gfx90a files: on gfx90a the image's rocBLAS has no code object
    (HG214, naming the processors it has), while the first layer alone runs; gfx942 runs on both."""
    w = lambda *p: os.path.join(A.work, *p)
    rc, doc = check("--target", "gfx90a", w("oci-base"))
    expect(rc == 0 and "HG214" not in codes(doc), f"base on gfx90a: exit {rc}, codes {codes(doc)}")
    for image in ("oci-top", "docker-top.tar"):
        rc, doc = check("--target", "gfx90a", w(image))
        lib = [f for f in doc["files"] if f["path"].endswith(LIBRARY)]
        msg = lib[0]["diagnostics"][0]["message"] if lib and lib[0]["diagnostics"] else ""
        expect(rc == 1 and lib and lib[0]["diagnostics"][0]["code"] == "HG214" and "gfx942" in msg,
               f"{image} on gfx90a: exit {rc}, library report {lib}")
        names = [f["path"] for f in doc["files"]]
        expect(not any(LIBRARY in n and "gfx90a" in n for n in names), f"{image}: a whited-out file was checked")
        rc, doc = check("--target", "gfx942", w(image))
        runs = [t["can_run"] for l in doc["libraries"] for t in l["targets"]]
        in_library = [c for f in doc["files"] if LIBRARY in f["path"] for c in codes({"files": [f]})]
        expect(runs == [True] and not in_library, f"{image} on gfx942: rocBLAS runs {runs}, codes {in_library}")
    # Without --target: which GPUs; each row what a check for its target says.
    rc, doc = check(w("oci-top"))
    for row in doc["support"]:
        rc_t, one = check("--target", row["target"], w("oci-top"))
        expect(row["runs"] == (rc_t == 0) and (row["runs"] or row["code"] in codes(one)),
               f"oci-top, which GPUs: {row['target']} {row['runs']} {row.get('code')}; its check: {rc_t} {codes(one)}")
    lib90a = [r for r in doc["support"] if r["target"].startswith("gfx90a")]
    expect(lib90a and not lib90a[0]["runs"], f"oci-top does not run on gfx90a: {lib90a}")
    # One layout holding both tags: both images checked, each named by its tag.
    rc, doc = check("--target", "gfx90a", w("layout"))
    tags = {f["path"][len(w("layout")) + 1:].split("!")[0] for f in doc["files"] if "!" in f["path"]}
    expect(tags == {"base", "top"}, f"a layout with two tags: images {tags}")


def not_found(doc):
    """HG120's (library, needed by) pairs, wherever the report puts them."""
    pairs = set()
    for f in doc["files"]:
        for d in f["diagnostics"] + [x for img in f["images"] for x in img["diagnostics"]]:
            m = re.search(r"(\S+), needed by (\S+), is not found", d["message"]) if d["code"] == "HG120" else None
            if m:
                pairs.add(m.groups())
    return pairs


def case_ProgramAsTheImageRunsIt():
    """The image's Entrypoint, found on PATH, with the libraries it loads found in the image as its dynamic
    loader finds them (symlinks, ld.so.conf.d, the config's LD_LIBRARY_PATH): what is missing is what
    `--sysroot` says of the same files unpacked, but for the library only LD_LIBRARY_PATH finds."""
    w = lambda *p: os.path.join(A.work, *p)
    rc_i, image = check("--target", "gfx942", w("run"))
    rc_t, tree = check("--target", "gfx942", "--sysroot", w("tree-run"), w("tree-run", "usr/bin/rocblas-bench"))
    missing_i, missing_t = not_found(image), not_found(tree)
    expected = {("librocblas.so.5", "rocblas-bench"), ("libhsa-runtime64.so.1", "libamdhip64.so.7")}
    expect(expected <= missing_i, f"the image: missing {sorted(missing_i)}")
    expect(("libgfortran.so.5", "rocblas-bench") in missing_t, f"the tree without the Env: missing {sorted(missing_t)}")
    expect(missing_i == missing_t - {("libgfortran.so.5", "rocblas-bench")},
           f"the image as one machine differs from its files with --sysroot:\n  image: {sorted(missing_i)}\n"
           f"  tree:  {sorted(missing_t)}")
    said = [d["message"] for f in image["files"] for d in f["diagnostics"] if d["code"] == "HG120"]
    expect(said and all("the Entrypoint program rocblas-bench" in m for m in said), f"HG120 names the program: {said[:2]}")
    # An Entrypoint the image does not have: HG124, and the image's files are still checked.
    d = os.path.join(A.work, "bad", "program")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(w("run"), d)
    umoci("config", "--image", d + ":run", "--config.entrypoint", "/usr/bin/absent")
    rc, doc = check("--target", "gfx942", d)
    expect("HG124" in codes(doc) and "HG120" not in codes(doc), f"a missing Entrypoint: codes {codes(doc)}")
    expect(any(f["path"].endswith("usr/bin/rocblas-bench") for f in doc["files"]), "a missing Entrypoint: files")


def copy_layout(name):
    dest = os.path.join(A.work, "bad", name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(os.path.join(A.work, "oci-top"), dest)
    return dest


def manifest_of(layout):
    index = json.load(open(os.path.join(layout, "index.json")))
    digest = index["manifests"][0]["digest"]
    return json.load(open(os.path.join(layout, "blobs/sha256", digest[7:])))


def blob(layout, digest):
    return os.path.join(layout, "blobs/sha256", digest[7:])


def case_DamagedImages():
    """Each damage is a finding naming the image and the layer; the other layers are still checked."""
    # A layer whose bytes do not match its digest: HG115, not read; the first layer is still checked
    # (without the top layer's whiteouts its gfx90a files are back).
    d = copy_layout("digest")
    top = manifest_of(d)["layers"][-1]["digest"]
    data = bytearray(open(blob(d, top), "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(blob(d, top), "wb").write(data)
    rc, doc = check("--target", "gfx942", d)
    expect(rc == 1 and "HG115" in codes(doc), f"digest mismatch: exit {rc}, codes {codes(doc)}")
    msgs = [x["message"] for f in doc["files"] for x in f["diagnostics"] if x["code"] == "HG115"]
    expect(msgs and "layer 2 of 2" in msgs[0], f"digest mismatch names the layer: {msgs}")
    expect(any(f["path"].endswith("vector_add_multi") for f in doc["files"]), "the other layer is checked")
    # A manifest naming a blob the image lacks: HG114.
    d = copy_layout("missing")
    os.remove(blob(d, manifest_of(d)["layers"][-1]["digest"]))
    rc, doc = check("--target", "gfx942", d)
    expect(rc == 1 and "HG114" in codes(doc), f"missing blob: exit {rc}, codes {codes(doc)}")
    expect(any(f["path"].endswith("vector_add_multi") for f in doc["files"]), "missing blob: the other layer")
    # index.json that is not JSON: HG114, and nothing else read.
    d = copy_layout("index")
    open(os.path.join(d, "index.json"), "w").write("{not json")
    rc, doc = check("--target", "gfx942", d)
    expect(rc == 1 and codes(doc) == ["HG114"], f"index not JSON: exit {rc}, codes {codes(doc)}")
    crafted()


def add(t, name, data=b"", kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data)
    t.addfile(info, io.BytesIO(data) if data else None)


def crafted():
    """A layout written by hand: a member named with ".." (HG116), a symlink to /etc/shadow (never
    followed nor handed over), a whiteout of a path no lower layer has, and a layer cut short (HG113
    naming it; so no HG117: a whiteout cannot be known to remove nothing when a layer is not read whole)."""
    d = os.path.join(A.work, "bad", "crafted")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "blobs/sha256"))
    program = open(os.path.join(A.apps, "vector_add_gfx90a"), "rb").read()

    def put(data, media="application/vnd.oci.image.layer.v1.tar+gzip"):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        open(blob(d, digest), "wb").write(data)
        return {"mediaType": media, "digest": digest, "size": len(data)}

    def layer(members):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as t:
            for m in members:
                add(t, *m)
        return raw.getvalue()

    first = layer([("usr/bin/vector_add_gfx90a", program), ("usr/lib/evil.so", b"", tarfile.SYMTYPE, "/etc/shadow")])
    second = layer([("../outside/vector_add_gfx90a", program), ("usr/.wh.never_there", b"")])
    cut = gzip.compress(layer([("usr/bin/again", program)]))
    cut = cut[:len(cut) // 2]
    layers = [put(gzip.compress(first)), put(second), put(cut)]
    diff_ids = ["sha256:" + hashlib.sha256(x).hexdigest() for x in (first, second, first)]
    config = put(json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": diff_ids},
                             "config": {"Env": ["PATH=/usr/bin"]}}).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = put(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": config, "layers": layers}).encode())
    json.dump({"schemaVersion": 2, "manifests": [dict(manifest, mediaType="application/vnd.oci.image.manifest.v1+json")]},
              open(os.path.join(d, "index.json"), "w"))
    open(os.path.join(d, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')
    rc, doc = check("--target", "gfx90a", d)
    found = codes(doc)
    for code in ("HG116", "HG113"):
        expect(code in found, f"crafted image: {code} missing from {found}")
    expect("HG117" not in found, f"crafted image: HG117 with a layer not read whole: {found}")
    layer3 = [x["message"] for f in doc["files"] for x in f["diagnostics"] if x["code"] == "HG113"]
    expect(layer3 and "layer 3 of 3" in layer3[0], f"the truncated layer is named: {layer3}")
    names = [f["path"] for f in doc["files"]]
    expect(d + "!usr/bin/vector_add_gfx90a" in names, f"crafted image: the program is checked: {names}")
    expect(not any("outside" in n or "evil" in n for n in names), f"crafted image: {names}")


# ---- a Python environment ----------------------------------------------------------------------------

def site_packages(dest):
    """A site-packages tree as auditwheel leaves one: a HIP library vendored under a hashed name in
    mypkg.libs/, an extension module that finds it through $ORIGIN, and rocBLAS's Tensile code objects
    in the package's own lib/ (as torch/lib/rocblas/library ships them)."""
    libs, pkg = os.path.join(dest, "mypkg.libs"), os.path.join(dest, "mypkg")
    os.makedirs(libs)
    os.makedirs(os.path.join(pkg, "lib"))
    shutil.copy(os.path.join(A.apps, "libkernels_lib.so"), os.path.join(libs, "libkernels_lib-1a2b3c4d.so"))
    open(os.path.join(pkg, "__init__.py"), "w").write("")
    src = os.path.join(A.work, "ext.c")
    open(src, "w").write("int PyInit__ext(void) { return 0; }\n")
    run("gcc", "-shared", "-fPIC", "-o", os.path.join(pkg, "_ext.cpython-311-x86_64-linux-gnu.so"), src,
        "-L" + libs, "-Wl,--no-as-needed", "-l:libkernels_lib-1a2b3c4d.so", "-Wl,-rpath,$ORIGIN/../mypkg.libs")
    shutil.copytree(os.path.join(A.work, "tree-base", LIBRARY), os.path.join(pkg, "lib/rocblas/library"))


def case_PythonEnvironment():
    """A site-packages tree and the same as a wheel: the vendored library and the package's kernel
    library get the same verdict; the extension module named alone is checked with the library it loads
    through its $ORIGIN run path."""
    site = os.path.join(A.work, "site-packages")
    if not os.path.isdir(site):
        site_packages(site)
    wheel = os.path.join(A.work, "mypkg-1.0-cp311-cp311-linux_x86_64.whl")
    if not os.path.exists(wheel):
        import zipfile
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
            for root, _, files in sorted(os.walk(site)):
                for f in sorted(files):
                    z.write(os.path.join(root, f), os.path.relpath(os.path.join(root, f), site))
    for target in TARGETS:
        rc_d, doc_d = check("--target", target, site)
        rc_w, doc_w = check("--target", target, wheel)
        vd, vw = verdict(doc_d, [site]), verdict(doc_w, [wheel + "!"])
        expect(rc_d == rc_w and vd == vw, f"{target}: the wheel's verdict differs from its files':\n  {vw}\n  {vd}")
        names = set(vd[0])
        expect("mypkg.libs/libkernels_lib-1a2b3c4d.so" in names, f"{target}: the vendored library: {sorted(names)}")
        expect(any(l.endswith("mypkg/lib/rocblas/library") for l in vd[1]), f"{target}: libraries {vd[1]}")
    ext = os.path.join(site, "mypkg", "_ext.cpython-311-x86_64-linux-gnu.so")
    rc, doc = check("--target", "gfx90a", ext)
    found = {f["path"]: f.get("needed_by", "") for f in doc["files"]}
    vendored = os.path.join(site, "mypkg", "..", "mypkg.libs", "libkernels_lib-1a2b3c4d.so")
    hits = [p for p in found if os.path.realpath(p) == os.path.realpath(vendored)]
    expect(hits and found[hits[0]] == ext, f"the extension module's vendored library: {found}")


def main():
    global A
    p = argparse.ArgumentParser()
    p.add_argument("case")
    p.add_argument("--root", required=True)
    p.add_argument("--apps", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--work", required=True)
    A = p.parse_args()
    if not os.path.exists(os.path.join(A.root, ".hipguard-root")):
        print(f"SKIP: no ROCm 7.2 root at {A.root} (scripts/rocm-root.sh --stack 7.2)")
        return 77
    for tool in ("umoci", "skopeo"):
        if not shutil.which(tool):
            print(f"FAIL: {tool} is not installed (scripts/deps.sh installs it)")
            return 1
    build()
    globals()["case_" + A.case]()
    print(f"{A.case}: {'failed' if FAILED else 'passed'}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
