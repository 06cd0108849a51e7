"""Ray and Dask are optional: `import arrowsmith` (and every function it has) works without
them, and imports neither, so a plain install stays light and fast to import."""
import subprocess
import sys


def test_import_arrowsmith_imports_no_engine():
    code = ("import sys, arrowsmith; arrowsmith.formats(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'dask', 'pandas')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
