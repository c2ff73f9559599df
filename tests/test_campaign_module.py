"""``cdpnb.campaign`` is a callable module: its type, ``CampaignModule``, repeats the
module's ``__all__`` in a ``TYPE_CHECKING`` block so that mypy types
``cdpnb.campaign.<name>``. That mirror is held to ``__all__`` here, not by care."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import cdpnb
import cdpnb.campaign as campaign_module
from cdpnb.campaign import CampaignModule
from cdpnb.campaign.run import run_campaign

SOURCE = Path(campaign_module.__file__ or "")


def mirrored() -> dict[str, ast.expr]:
    """The names the ``TYPE_CHECKING`` block of ``CampaignModule`` assigns, with what
    each is assigned (``Cell`` or ``staticmethod(load)``)."""
    tree = ast.parse(SOURCE.read_text())
    [cls] = [node for node in tree.body
             if isinstance(node, ast.ClassDef) and node.name == "CampaignModule"]
    [block] = [node for node in cls.body if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    names: dict[str, ast.expr] = {}
    for statement in block.body:
        assert isinstance(statement, ast.Assign), ast.unparse(statement)
        [target] = statement.targets
        assert isinstance(target, ast.Name), ast.unparse(statement)
        assert target.id not in names, f"{target.id} is mirrored twice"
        names[target.id] = statement.value
    return names


def test_the_type_checking_mirror_names_what_all_names() -> None:
    assert sorted(mirrored()) == sorted(campaign_module.__all__)


def test_each_mirrored_name_is_the_modules_own_object_as_mypy_must_see_it() -> None:
    """``X = X`` for a class, ``f = staticmethod(f)`` for a function (without it, mypy
    would bind ``f``'s first parameter to the module), each naming the very object the
    module exports under that name."""
    module_names = vars(campaign_module)
    for name, value in mirrored().items():
        exported: Any = getattr(cdpnb.campaign, name, None)
        assert name in module_names, f"{name} is mirrored, and the module has no such name"
        assert exported is module_names[name], name
        source = ast.unparse(value)
        if inspect.isclass(exported):
            assert isinstance(value, ast.Name), f"{name} = {source}: a class is named as is"
            referenced = value
        else:
            assert isinstance(value, ast.Call) and ast.unparse(value.func) == "staticmethod" \
                and len(value.args) == 1 and isinstance(value.args[0], ast.Name), \
                f"{name} = {source}: a function is mirrored as staticmethod({name})"
            referenced = value.args[0]
        assert module_names[referenced.id] is exported, f"{name} = {source}: another object"


def test_the_module_is_the_call_and_its_namespace() -> None:
    assert type(cdpnb.campaign) is CampaignModule
    assert cdpnb.campaign is campaign_module and cdpnb.sync.campaign is campaign_module
    assert CampaignModule.__call__ is run_campaign  # (a staticmethod: no module bound)
    assert inspect.signature(cdpnb.campaign) == inspect.signature(run_campaign)
    for name in campaign_module.__all__:  # the mirror adds nothing at run time
        assert name not in vars(CampaignModule), name
