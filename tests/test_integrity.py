"""The shared HMAC key and tags (kgeval.integrity)."""

import pytest

from kgeval.errors import CheckFailed, InputError
from kgeval.integrity import KEY_ENV, KEY_FILE_ENV, check_tag, integrity_key, sign


def test_no_key_configured(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    assert integrity_key() is None


def test_key_from_env_and_file(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, "k" * 20)
    assert integrity_key() == b"k" * 20
    monkeypatch.delenv(KEY_ENV)
    keyfile = tmp_path / "key"
    keyfile.write_text("  secret-key-of-the-service \n")
    monkeypatch.setenv(KEY_FILE_ENV, str(keyfile))
    assert integrity_key() == b"secret-key-of-the-service"


def test_bad_keys_are_named(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(InputError, match="at least 16 bytes"):
        integrity_key()
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "absent"))
    with pytest.raises(InputError, match="absent.*cannot read"):
        integrity_key()


def test_tags_detect_edits_and_other_keys():
    key = b"x" * 32
    tag = sign("payload", key)
    check_tag("payload", tag, key, "gold/hr.json")
    with pytest.raises(CheckFailed, match="gold/hr.json: integrity tag does not match"):
        check_tag("payload!", tag, key, "gold/hr.json")
    with pytest.raises(CheckFailed, match="does not match"):
        check_tag("payload", tag, b"y" * 32, "gold/hr.json")
    with pytest.raises(CheckFailed, match="no integrity tag"):
        check_tag("payload", None, key, "gold/hr.json")
