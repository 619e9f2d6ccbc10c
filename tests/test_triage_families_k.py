"""General triage families added with corpus round k (issue 12), on real excerpts from public threads
(``tests/fixtures/triage/real/``, sources.json) and against lines of the same family that must not fire:

- a model directory with no weights file ("Error no file named pytorch_model.bin, model.safetensors, ...
  found in directory X": a cut download, a missing shard index, a save that wrote no weights) is a
  checkpoint failure, also when the terminal wrapped the line; diffusers' fallback from a missing
  .safetensors to the .bin weights is not;
- a traceback that a log collector flattened into one line keeps its frames, so the exception line after
  it is read as the traceback's exception (a hub offline-mode refusal, not an unterminated traceback).
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri, tri_text


def test_weights_missing_in_model_dir_is_a_checkpoint_failure(tmp_path: Path) -> None:
    for name in (
        "weights_missing_from_pretrained_local_dir",
        "weights_missing_diffusers_incomplete_download",
        "weights_missing_after_zero3_save_wrapped",
    ):
        assert primary(tri(name)) == ("Fail", "checkpoint_failure", "weights_missing_in_model_dir"), name
    fallback = (
        "An error occurred while trying to fetch /models/vae: Error no file named "
        "diffusion_pytorch_model.safetensors found in directory /models/vae.\n"
        "Defaulting to unsafe serialization. Pass `allow_pickle=False` to raise an error instead.\n"
    )
    assert primary(tri_text(tmp_path, fallback))[2] != "weights_missing_in_model_dir"
    # a missing config or tokenizer file is another matter than missing weights
    other = "OSError: Error no file named config.json found in directory /models/x.\n"
    assert primary(tri_text(tmp_path, other))[2] != "weights_missing_in_model_dir"


def test_flattened_traceback_reads_its_exception(tmp_path: Path) -> None:
    flat = (
        'Traceback (most recent call last): File "/venv/huggingface_hub/file_download.py", line 1261, in '
        'hf_hub_download metadata = get_hf_file_metadata( File "/venv/huggingface_hub/utils/_http.py", line '
        "78, in send raise OfflineModeIsEnabled(\n"
        "2024-03-28T14:46:27.255Z\n"
        "huggingface_hub.utils._http.OfflineModeIsEnabled: Cannot reach https://huggingface.co/org/model/\n"
    )
    assert primary(tri_text(tmp_path, flat))[:2] == ("Blocked", "hf_offline_missing")
    # a header with inline frames and no exception after it stays an unterminated traceback
    cut = 'Traceback (most recent call last): File "/app/train.py", line 3, in main run() File "/app/x.py", line 9, in run\n'
    assert primary(tri_text(tmp_path, cut))[2] == "traceback:unterminated"
