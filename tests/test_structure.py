"""The shape the engine keeps: a family module is a declaration (no classes or functions of its own, its
docstring no longer than what it declares), no import cycle among the pack's modules, and docs/design.md's
picture drawn from the imports. Line lengths and the rest of ComfyUI's rule set are ruff's (pyproject.toml),
which the test command runs (scripts/run-pytest.sh); sizes follow from reading, not caps."""
import ast
import re

import pytest

from sas_harness import ROOT

PRODUCT = [ROOT / "__init__.py", *sorted((ROOT / "nodes").rglob("*.py")), *sorted((ROOT / "patches").rglob("*.py"))]
FAMILIES = [p for p in sorted((ROOT / "patches" / "families").glob("*.py")) if p.name != "__init__.py"]


@pytest.mark.parametrize("path", FAMILIES, ids=lambda p: p.name)
def test_a_family_module_is_a_declaration(path):
    tree = ast.parse(path.read_text())
    classes = [n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.AsyncFunctionDef))]
    assert not classes, f"{path.name} defines {classes}: a family module declares (patches/families/__init__.py)"


@pytest.mark.parametrize("path", FAMILIES, ids=lambda p: p.name)
def test_a_family_modules_docstring_is_no_longer_than_its_declarations(path):
    """What the family declares and why, short: the facts are the declaration's, the history git's."""
    tree = ast.parse(path.read_text())
    docstring = ast.get_docstring(tree) or ""
    code = [line for line in path.read_text().splitlines()[tree.body[0].end_lineno:]
            if line.strip() and not line.lstrip().startswith("#")]
    assert len(docstring.splitlines()) <= len(code), f"{path.name}: a docstring of {len(docstring.splitlines())} lines"


def _imports(path, modules=()) -> set[str]:
    """The pack's modules ``path`` imports at its top level, as dotted names under the pack. Where
    ``modules`` names what ``from . import x`` imports, that is x alone, not also the package."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".") if package else []
            base = base[:len(base) - node.level + 1] if node.level > 1 else base
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            named = {f"{target}.{alias.name}" for alias in node.names}
            found.update(named & set(modules) or {target, *named})
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


# -- docs/design.md's picture --------------------------------------------------------------------

PACKAGES = ("patches.backends", "patches.families")  # drawn as one box each: their modules are declarations


def _units() -> dict[str, list]:
    """The picture's boxes: each module of nodes/ and patches/ (in its folders too), and the two declaration
    packages whole."""
    units = {}
    declarations = [ROOT / package.replace(".", "/") for package in PACKAGES]
    for folder in ("nodes", "patches"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if any(place in path.parents for place in declarations):
                continue
            if path.name == "__init__.py" and path.parent.parent != ROOT:
                continue  # a folder inside patches/ (state/, extras/): its face is a docstring, drawn as a frame
            units[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = [path]
    for package in PACKAGES:
        units[package] = sorted((ROOT / package.replace(".", "/")).glob("*.py"))
    return units


def _unit_imports(units: dict[str, list]) -> dict[str, set[str]]:
    """Which box imports which. ``from . import x`` counts as importing x (not the package), and a package's
    import of a submodule that imports the package back (nodes/__init__.py loading its nodes) is left out."""
    def box(name):
        return max((u for u in units if name == u or name.startswith(u + ".")), key=len, default=None)
    graph = {}
    for unit, paths in units.items():
        found = set()
        for path in paths:
            for target in _imports(path, units):
                found.add(box(target))
        graph[unit] = found - {None, unit}
    for unit, deps in graph.items():
        for dep in list(deps):
            if dep in graph and unit in graph[dep] and dep.startswith(unit + "."):
                deps.discard(dep)
    return graph


def _reach(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    reach: dict[str, set[str]] = {}

    def visit(name):
        if name not in reach:
            reach[name] = set()
            for dep in graph.get(name, ()):
                reach[name] |= {dep} | visit(dep)
        return reach[name]
    for name in graph:
        visit(name)
    return reach


def _picture() -> tuple[dict[str, str], set[tuple[str, str]]]:
    """(box id -> module, arrows) of the mermaid block in docs/design.md."""
    text = (ROOT / "docs" / "design.md").read_text()
    block = re.search(r"```mermaid\n(.*?)```", text, re.S).group(1)
    boxes = {}
    for box_id, label in re.findall(r'^\s*(\w+)\["([^"]+)"\]\s*$', block, re.M):
        boxes[box_id] = label.removesuffix(".py").removesuffix("/").replace("/", ".").removesuffix(".__init__")
    arrows = {(boxes.get(a, a), boxes.get(b, b)) for a, b in re.findall(r"^\s*(\w+)\s*-->\s*(\w+)\s*$", block, re.M)}
    return boxes, arrows


def test_the_design_picture_names_every_module():
    boxes, _ = _picture()
    units = _units()
    assert sorted(set(units) - set(boxes.values())) == [], "modules missing from docs/design.md's picture"
    assert sorted(set(boxes.values()) - set(units)) == [], "boxes in docs/design.md's picture that are no module"


def test_each_arrow_of_the_design_picture_is_an_import_and_it_reaches_what_the_imports_reach():
    _, arrows = _picture()
    graph = _unit_imports(_units())
    assert sorted(a for a in arrows if a[1] not in graph.get(a[0], ())) == [], "arrows that are no import"
    drawn: dict[str, set[str]] = {unit: set() for unit in graph}
    for a, b in arrows:
        drawn[a].add(b)
    imported, pictured = _reach(graph), _reach(drawn)
    missing = sorted((a, b) for a in graph for b in imported[a] - pictured[a])
    assert missing == [], f"imports the picture does not show, even through other arrows: {missing}"
