"""Each Gherkin step is defined once: no step text has a definition in two modules, and every
step of every scenario in features/ matches exactly one definition."""

from __future__ import annotations

import importlib
from collections import defaultdict
from pathlib import Path

from pytest_bdd.parser import FeatureParser
from pytest_bdd.steps import StepFunctionContext, step_function_context_registry

HERE = Path(__file__).parent
FEATURES = Path(__file__).resolve().parents[2] / "features"


def definitions() -> list[StepFunctionContext]:
    """The step definitions of the feature modules and their shared conftest."""
    for module in sorted(HERE.glob("test_features_*.py")):
        importlib.import_module(f"tests.features.{module.stem}")
    return [context for context in list(step_function_context_registry.values())
            if context.step_func.__module__.startswith("tests.features.")]


def scenario_steps() -> list[tuple[str, str, str]]:
    """(feature file, step type, step text) of every step of every scenario, examples rendered."""
    steps = []
    for path in sorted(FEATURES.glob("*.feature")):
        feature = FeatureParser(str(FEATURES), path.name).parse()
        for template in feature.scenarios.values():
            contexts = [context for examples in template.examples for context in examples.as_contexts()] or [{}]
            for context in contexts:
                steps += [(path.name, step.type, step.name) for step in template.render(context).steps]
    return steps


def test_no_step_text_is_defined_in_two_modules() -> None:
    modules: dict[tuple[str | None, str], set[str]] = defaultdict(set)
    for context in definitions():
        modules[(context.type, context.parser.name)].add(context.step_func.__module__)
    assert {step: where for step, where in modules.items() if len(where) > 1} == {}


def test_every_scenario_step_matches_exactly_one_definition() -> None:
    defined = definitions()
    steps = scenario_steps()
    assert len(steps) > 300
    ambiguous_or_missing = {}
    for feature, kind, text in steps:
        matching = [f"{c.step_func.__module__}.{c.step_func.__name__}" for c in defined
                    if c.type in (None, kind) and c.parser.is_matching(text)]
        if len(matching) != 1:
            ambiguous_or_missing[(feature, kind, text)] = matching
    assert ambiguous_or_missing == {}
