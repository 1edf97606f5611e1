"""The set-up files agree with each other, and `import posenc` stays light."""

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def pins():
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    entries = [line for line in lines if line.strip() and not line.startswith("#")]
    return {canonicalize_name(Requirement(line).name): Requirement(line) for line in entries}


def declared_requirements():
    extras = PROJECT["optional-dependencies"].values()
    every = PROJECT["dependencies"] + [r for extra in extras for r in extra]
    return [Requirement(r) for r in every if not r.startswith("posenc")]


def test_import_posenc_loads_no_framework():
    heavy = "('torch', 'tensorflow', 'keras', 'jax', 'flax', 'matplotlib', 'posenc.torch', 'posenc.lessons')"
    # convert_layout picks its backend entry by the array: a NumPy one imports no framework either.
    use = "posenc.convert_layout(posenc.positional_encoding(3, 6), 'interleaved', 'sin_cos')"
    code = f"import sys, posenc; {use}; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert out.stderr == ""


def test_constraints_pin_every_package_exactly():
    for name, requirement in pins().items():
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{name} is not pinned exactly: {requirement}"
    assert str(pins()["torch"].specifier) == "==2.13.0"  # the CPU wheel on disk (DESIGN.md, section 4)


def test_pyproject_has_lower_bounds_only_and_every_dependency_is_pinned():
    for requirement in declared_requirements():
        assert all(spec.operator == ">=" for spec in requirement.specifier), f"not a lower bound: {requirement}"
        pin = pins().get(canonicalize_name(requirement.name))
        assert pin is not None, f"{requirement.name} has no pin in constraints.txt"
        (pinned,) = pin.specifier
        assert requirement.specifier.contains(pinned.version, prereleases=True), (
            f"the pin {pin} does not satisfy pyproject's {requirement}"
        )


def test_environment_yml_delegates_to_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    (pip_section,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert sorted(re.split(r"[=<>]", d)[0] for d in conda) == ["pip", "python"]
    python = next(d for d in conda if d.startswith("python"))
    version = python.split("=")[-1]
    assert SpecifierSet(PROJECT["requires-python"]).contains(version)
    assert "-c constraints.txt" in pip_section
    (editable,) = [line for line in pip_section if line.startswith("-e")]
    extras = re.fullmatch(r"-e \.\[(.+)\]", editable).group(1).split(",")
    assert set(extras) <= set(PROJECT["optional-dependencies"])


def test_make_lab_passes_lab_args_through():
    out = subprocess.run(["make", "-n", "lab", "LAB_ARGS=--no-browser --port=8899"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lab = [line for line in out.splitlines() if "jupyter lab" in line]
    assert lab and lab[-1].endswith("--no-browser --port=8899")
    # As root (CI, containers) Jupyter exits at once without --allow-root.
    assert ("--allow-root" in lab[-1]) == (os.geteuid() == 0)


def test_mutmut_configuration_mutates_every_module():
    # `make mutants` mutates the whole package: nothing is left out by a file list; what is not
    # mutated says why on its line (a `# pragma: no mutate ... (reason)` or a comment above it).
    mutmut = PYPROJECT["tool"]["mutmut"]
    assert mutmut["source_paths"] == ["posenc/"]
    assert "only_mutate" not in mutmut and "do_not_mutate" not in mutmut
    selection = mutmut["pytest_add_cli_args_test_selection"]
    assert selection[0] == "tests/"
    keyword = selection.index("-k")
    assert selection[keyword + 1] == "not (traced and torch)"  # torch.compile's tests
    for argument in selection[1:keyword] + selection[keyword + 2:]:
        option, _, path = argument.partition("=")
        assert option in ("--ignore", "--deselect") and (ROOT / path.partition("::")[0]).exists(), argument
    for path in mutmut["also_copy"]:
        assert (ROOT / path).exists(), path
    assert "mutants/" in (ROOT / ".gitignore").read_text().splitlines()


def _mutants_script():
    spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_mutant_sample_draws_from_every_module_in_proportion():
    mutants = _mutants_script()
    sizes = {"front": 600, "rope.rotary": 300, "engine.routes": 13, "engine.registry": 1}
    names = [f"posenc.{module}.x_f__mutmut_{i}" for module, size in sizes.items() for i in range(size)]
    sample = mutants.stratified(names, 100, seed=3)
    drawn = {module: sum(mutants.module_of(name) == module for name in sample) for module in sizes}
    assert len(sample) == len(set(sample)) == 100
    # Two each (one from a module of one), then 93 shared as 600, 300 and 13 of 914: 61.05, 30.53
    # and 1.32, rounded down, and the one place left to the largest remainder (rope.rotary's).
    assert drawn == {"front": 2 + 61, "rope.rotary": 2 + 31, "engine.routes": 2 + 1, "engine.registry": 1}
    assert sample == mutants.stratified(names, 100, seed=3) != mutants.stratified(names, 100, seed=4)
    assert set(mutants.stratified(names, 5000, seed=3)) == set(names)


def test_a_mutants_module_is_named_the_same_from_its_path_and_from_its_mutants():
    mutants = _mutants_script()
    for path, name in [("posenc/front.py", "posenc.front.x_f__mutmut_1"),
                       ("posenc/rope/rotary.py", "posenc.rope.rotary.xǁRotaryEmbeddingǁforward__mutmut_2"),
                       ("posenc/rope/__init__.py", "posenc.rope.x_f__mutmut_3"),
                       ("posenc/__init__.py", "posenc.x_f__mutmut_4")]:
        assert mutants.module_of_path(path) == mutants.module_of(name), path
