"""A PEP 517 build backend in the standard library alone, for this package.

Why not setuptools: pip builds a setuptools project in an isolated
environment it fills from the index (so it fails offline), and without
isolation setuptools < 70.1 still needs the separate `wheel` package, which
a fresh venv does not have. This backend needs nothing, so
`pip install ./clients/python` works offline, with or without build
isolation. It only packs files: retryd/*.py into a py3-none-any wheel.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

NAME = "retryd"
SUMMARY = "Clients for the retryd daemon (pi RPC protocol): sync and asyncio, stdlib only"
REQUIRES_PYTHON = ">=3.8"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files are dated 1980-01-02 (zip's epoch + 1 day) unless SOURCE_DATE_EPOCH
# says otherwise, so two builds of the same tree are the same bytes.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315619200"))


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in retryd/__init__.py")
    return m.group(1)


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: %s\nDescription-Content-Type: text/markdown\n\n%s"
            % (NAME, _version(), SUMMARY, REQUIRES_PYTHON, readme))


def _package_files():
    """(path in the archive, path on disk) of the package's modules."""
    pkg = os.path.join(ROOT, NAME)
    return [("%s/%s" % (NAME, n), os.path.join(pkg, n))
            for n in sorted(os.listdir(pkg)) if n.endswith(".py")]


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _wheel_name():
    return "%s-%s-py3-none-any.whl" % (NAME, _version())


def _write_wheel(directory, entries):
    """entries: (archive path, bytes); adds WHEEL, METADATA and RECORD."""
    info = _dist_info()
    entries = list(entries) + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: retryd_build\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = io.StringIO()
    path = os.path.join(directory, _wheel_name())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            _zip_add(zf, name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.write("%s,sha256=%s,%d\n" % (name, digest.decode(), len(data)))
        record.write("%s/RECORD,,\n" % info)
        _zip_add(zf, info + "/RECORD", record.getvalue().encode("utf-8"))
    return os.path.basename(path)


def _zip_add(zf, name, data):
    zi = zipfile.ZipInfo(name, time.gmtime(max(EPOCH, 315619200))[:6])
    zi.external_attr = 0o644 << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(zi, data)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 / PEP 660 hooks ----------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(n, _read(p)) for n, p in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """pip install -e: a .pth file that puts this folder on sys.path."""
    return _write_wheel(wheel_directory, [("%s_editable.pth" % NAME,
                                           (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    files = ["pyproject.toml", "README.md", "_build/retryd_build.py"]
    files += [n for n, _ in _package_files()]
    ex = os.path.join(ROOT, "examples")
    files += ["examples/" + n for n in sorted(os.listdir(ex)) if n.endswith(".py")]
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        pkg_info = _metadata().encode("utf-8")
        for name, data in [("PKG-INFO", pkg_info)] + [(f, _read(os.path.join(ROOT, f)))
                                                      for f in files]:
            ti = tarfile.TarInfo("%s/%s" % (base, name))
            ti.size = len(data)
            ti.mtime = EPOCH
            ti.mode = 0o755 if name.startswith("examples/") else 0o644
            tf.addfile(ti, io.BytesIO(data))
    return os.path.basename(path)
