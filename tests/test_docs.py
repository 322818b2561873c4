"""The docs say what the code declares."""
import importlib.util

from sas_harness import ROOT
from sage_attention_scope.patches import Reason

DOC = ROOT / "docs" / "user-guide.md"


def _write_docs():
    spec = importlib.util.spec_from_file_location("sas_write_docs", ROOT / "scripts" / "write_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_match_the_code():
    write_docs = _write_docs()
    text = DOC.read_text()
    for name, make in write_docs.TABLES.items():
        table = make()
        assert table.count("\n|") > 2 and f"<!-- generated:{name} -->\n{table}\n<!-- /generated:{name} -->" in text, (
            f"docs/user-guide.md's {name} table differs from the code; run: .venv/bin/python scripts/write_docs.py")
    assert write_docs.stale() == []


def test_every_reason_is_explained():
    text = DOC.read_text()
    missing = [r.value for r in Reason if f"| `{r.value}` |" not in text]
    assert not missing
