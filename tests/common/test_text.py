"""TextEmbedder: unit vectors, deterministic, paraphrases closer than unrelated sentences, caches."""

from __future__ import annotations

import numpy as np
import pytest

from common.text import DIM, TextEmbedder


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    return TextEmbedder()


def test_unit_norm_and_shape(embedder: TextEmbedder) -> None:
    e = embedder.embed_many(["put the red cube on the plate", "open the top drawer"])
    assert e.shape == (2, DIM) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)


def test_paraphrases_closer_than_unrelated(embedder: TextEmbedder) -> None:
    a, b, c = embedder.embed_many(
        [
            "put the red cube on the plate",
            "place the red block onto the dish",
            "the stock market fell sharply today",
        ]
    )
    assert a @ b > a @ c + 0.2


def test_deterministic_across_instances(embedder: TextEmbedder) -> None:
    text = "grab the green can, then leave it resting on top of the plate"
    np.testing.assert_array_equal(embedder.embed(text), TextEmbedder().embed(text))


def test_batch_equals_single(embedder: TextEmbedder) -> None:
    texts = ["a", "a much longer sentence that pads the short one in a batch"]
    fresh = TextEmbedder()
    single = np.stack([fresh.embed(t) for t in texts])
    np.testing.assert_array_equal(TextEmbedder().embed_many(texts), single)  # bit for bit


def test_disk_cache_is_used(tmp_path) -> None:
    first = TextEmbedder(cache_dir=tmp_path)
    v = first.embed("stack the blue cube")
    files = list(tmp_path.glob("*.npy"))
    assert len(files) == 1
    np.save(files[0], np.full(DIM, 0.5, np.float32))  # a second embedder must read the file, not recompute
    assert np.all(TextEmbedder(cache_dir=tmp_path).embed("stack the blue cube") == 0.5)
    assert np.all(first.embed("stack the blue cube") == v)  # in-memory cache wins in the first one


def test_an_embedding_does_not_depend_on_what_else_was_asked_for() -> None:
    """Bit for bit: a text embedded alone, in a batch with a longer text, or after other texts gives the
    same vector, so a worker's history never changes a policy's inputs (FINDINGS #11)."""
    alone = TextEmbedder().embed_many(["red block"])[0]
    batched = TextEmbedder().embed_many(["red block", "put the small wooden block inside the open container "
                                         "on the left side of the table"])[0]
    after = TextEmbedder()
    after.embed_many(["open the drawer", "stack the cube on the peg"])
    assert np.array_equal(alone, batched) and np.array_equal(alone, after.embed("red block"))
