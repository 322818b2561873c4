"""The docs say what the code declares."""
import re

from conftest import ROOT
from sage_attention_scope.patches import Reason, families

DOC = ROOT / "docs" / "sage-attention.md"


def test_supported_models_tables_match_the_family_declarations():
    text = DOC.read_text()
    found = re.search(r"<!-- families:begin[^>]*-->\n(.*?)\n<!-- families:end -->", text, re.S)
    assert found, "docs/sage-attention.md lost its families:begin/end markers"
    assert found.group(1) == families.markdown_tables(), (
        "docs/sage-attention.md's supported-models tables differ from patches/families; paste this:\n"
        + families.markdown_tables())


def test_every_reason_is_explained():
    text = DOC.read_text()
    missing = [r.value for r in Reason if f"| `{r.value}` |" not in text]
    assert not missing
