"""Settings: camelCase and snake_case keys, validation with defaults kept for bad values."""

from __future__ import annotations

import pytest

from cctest.config import Settings
from cctest.errors import ConfigError, UnknownSchemeError


def test_camel_case_keys_from_the_wire():
    s, errors = Settings.from_mapping(
        {"maxNewTokens": 16, "relativeThreshold": 0.5, "mode": "monitor", "logAll": True}
    )
    assert errors == []
    assert (s.max_new_tokens, s.relative_threshold, s.mode, s.log_all) == (16, 0.5, "monitor", True)


def test_invalid_values_keep_defaults_and_each_gives_one_message():
    s, errors = Settings.from_mapping(
        {
            "mutants": -3,
            "mode": "loud",
            "temperature": "hot",
            "schemes": ["REP_R", "NOPE"],
            "bogus": 1,
            "logAll": "yes",
        }
    )
    d = Settings()
    assert (s.mutants, s.mode, s.temperature, s.schemes, s.log_all) == (
        d.mutants,
        d.mode,
        d.temperature,
        d.schemes,
        d.log_all,
    )
    assert len(errors) == 6
    assert any("bogus" in e for e in errors)
    assert all(e.startswith("cctest:") for e in errors)


def test_booleans_are_not_integers():
    s, errors = Settings.from_mapping({"mutants": True})
    assert s.mutants == Settings().mutants and len(errors) == 1


def test_replace_validates():
    assert Settings().replace(mutants=3).mutants == 3
    with pytest.raises(ConfigError):
        Settings().replace(relative_threshold=2.0)


def test_round_trip_to_dict():
    s = Settings(schemes=("REP_R",), stop=("\n\n",))
    again, errors = Settings.from_mapping(s.to_dict())
    assert errors == [] and again == s


def test_scheme_names_in_any_case_and_one_sentence_for_an_unknown_one():
    assert Settings().replace(schemes=["rel_r", "Gra_C"]).schemes == ("REL_R", "GRA_C")
    s, errors = Settings.from_mapping({"schemes": ["ini"]})
    assert (s.schemes, errors) == (("INI",), [])
    from cctest.mutators import SCHEMES

    names = ", ".join(SCHEMES)
    with pytest.raises(UnknownSchemeError) as exc:  # the sentence `cctest mutate` prints, unprefixed
        Settings().replace(schemes=("FOO",))
    assert str(exc.value) == f"unknown mutation scheme 'FOO'; the schemes are {names}."
    _, errors = Settings.from_mapping({"schemes": ["FOO"]})
    assert errors == [
        f"cctest: setting 'schemes': unknown mutation scheme 'FOO'; the schemes are {names}; "
        "the default is used."
    ]


def test_spare_suffix_from_the_wire_without_rebuilding_the_backend():
    from lsp_server import settings as wire

    s, errors = wire.parse({"spareSuffix": False})
    assert errors == [] and s.spare_suffix is False and Settings().spare_suffix is True
    assert wire.backend_key(s) == wire.backend_key(Settings())  # the model is not reloaded for it
    assert wire.to_wire(s)["spareSuffix"] is False
    bad, errors = wire.parse({"spareSuffix": "no"})
    assert bad.spare_suffix is True and len(errors) == 1 and "spareSuffix" in errors[0]
