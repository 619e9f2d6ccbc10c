"""Triage added with corpus round af (issue 12), on real excerpts (tuning cases of ``tests/corpus/``) and against
near misses that must not fire:

- an exception line quoted as inline code in an issue's prose (```RuntimeError: ...```) is read as the exception
  line it quotes, so the exception table names it; prose that merely quotes a type name is not.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import assert_no_finding, assert_primary, tri_text, tuning_case


def test_exception_quoted_as_inline_code_is_read(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("tc-dddd-trainer-resume-truncated-ckpt-after-disk-full"))
    assert_primary(res, "Fail", "checkpoint_failure", "exc_checkpoint_read")
    assert res["primary"]["line"] == 1


def test_inline_code_that_names_a_type_in_prose_is_not_an_exception(tmp_path: Path) -> None:
    text = "I tried `RuntimeError` handling around `torch.load` but nothing changed.\nstep 3/10 done\n"
    assert_no_finding(tri_text(tmp_path, text))
