"""The digest of a study's plan: SHA-256 of its design and analysis plan in canonical JSON, so that anyone can check
which plan a run record was made under.

The *design* is what the study declared it would run when it declared its analysis plan: the settings a run is made
with (:meth:`~sb3_ablation.study.plan.config.StudyConfig.run_settings` and the record format), the envs and the
variants of that invocation. The seeds are not part of it (a study may run them in blocks; the plan's ``seeds`` and
``looks`` say which ones its verdicts use). The *analysis plan* is
:meth:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan.to_dict`. Both are stored in ``study.json`` (``design``
and ``analysis``), with the digest (``analysis_declared.digest``; each amendment has its own), and every record the
study writes carries the digest of the plan in force (``plan_digest``). To check one by hand::

    python -c "import json, hashlib; m = json.load(open('study.json')); \\
        print(hashlib.sha256(json.dumps({'analysis': m['analysis'], 'design': m['design']}, sort_keys=True, \\
        separators=(',', ':'), ensure_ascii=True, allow_nan=False).encode()).hexdigest())"

(for an amended plan, ``analysis`` is the plan in force and the digest is the last amendment's).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(value: Any) -> bytes:
    """
    The canonical JSON of a value: keys sorted, no spaces, ASCII only, no NaN (equal values give equal bytes).

    :raise ValueError: the value holds a non-finite float or something JSON cannot write
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def plan_digest(design: Mapping[str, Any], analysis: Mapping[str, Any]) -> str:
    """
    :param design: the study's design (see the module docstring), JSON-ready
    :param analysis: the analysis plan as :meth:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan.to_dict` gives it
    :return: the hexadecimal SHA-256 of ``{"analysis": analysis, "design": design}`` in :func:`canonical_json`
    """
    return hashlib.sha256(canonical_json({"analysis": dict(analysis), "design": dict(design)})).hexdigest()


def study_design(settings: Mapping[str, Any], envs: list[str], variants: list[str]) -> dict[str, Any]:
    """
    The design a plan's digest covers.

    :param settings: the run settings the study folder is tied to (``study.json``'s ``settings``)
    :param envs: the env ids the plan was declared for
    :param variants: the variants the plan was declared for
    """
    return {"settings": dict(settings), "envs": list(envs), "variants": list(variants)}
