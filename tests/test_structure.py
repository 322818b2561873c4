"""The shape the engine keeps: a family module is a declaration (no classes or functions of its own), and
no import cycle among the pack's modules. Line lengths and the rest of ComfyUI's rule set are ruff's
(pyproject.toml), which the test command runs (scripts/run-pytest.sh); sizes follow from reading, not caps."""
import ast

import pytest

from sas_harness import ROOT

PRODUCT = [ROOT / "__init__.py", *sorted((ROOT / "nodes").rglob("*.py")), *sorted((ROOT / "patches").rglob("*.py"))]
FAMILIES = [p for p in sorted((ROOT / "patches" / "families").glob("*.py")) if p.name != "__init__.py"]


@pytest.mark.parametrize("path", FAMILIES, ids=lambda p: p.name)
def test_a_family_module_is_a_declaration(path):
    tree = ast.parse(path.read_text())
    classes = [n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.AsyncFunctionDef))]
    assert not classes, f"{path.name} defines {classes}: a family module declares (patches/families/__init__.py)"


def _imports(path) -> set[str]:
    """The pack's modules ``path`` imports at its top level, as dotted names under the pack."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".") if package else []
            base = base[:len(base) - node.level + 1] if node.level > 1 else base
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def test_no_import_cycle_among_the_packs_modules():
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in PRODUCT}
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    # a package importing its own submodules (to register them) is how registries fill, not a cycle
    graph = {name: {m for m in deps if not m.startswith(name + ".")} for name, deps in graph.items()}
    seen, stack = set(), []

    def visit(name):
        if name in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(name):] + [name]))
        if name in seen:
            return
        stack.append(name)
        for dep in sorted(graph[name]):
            visit(dep)
        stack.pop()
        seen.add(name)
    for name in sorted(graph):
        visit(name)
