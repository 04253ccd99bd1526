"""meta.properties: first start writes it; another node or cluster is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksteward.metadata.meta_properties import MetaPropertiesError, ensure_meta_properties, random_uuid_text


def test_first_start_writes_and_later_starts_agree(tmp_path: Path) -> None:
    cluster = ensure_meta_properties([tmp_path / "a", tmp_path / "b"], 1)
    assert len(cluster) == 22
    assert ensure_meta_properties([tmp_path / "a", tmp_path / "b"], 1) == cluster
    text = (tmp_path / "a" / "meta.properties").read_text()
    assert f"cluster.id={cluster}" in text
    assert "node.id=1" in text


def test_other_node_id_is_refused(tmp_path: Path) -> None:
    ensure_meta_properties([tmp_path], 1)
    with pytest.raises(MetaPropertiesError, match=r"node\.id=1, but this server is node\.id=2"):
        ensure_meta_properties([tmp_path], 2)


def test_directories_of_two_clusters_are_refused(tmp_path: Path) -> None:
    ensure_meta_properties([tmp_path / "a"], 1)
    ensure_meta_properties([tmp_path / "b"], 1)
    with pytest.raises(MetaPropertiesError, match="different clusters"):
        ensure_meta_properties([tmp_path / "a", tmp_path / "b"], 1)


def test_configured_cluster_id_must_match(tmp_path: Path) -> None:
    ensure_meta_properties([tmp_path], 1)
    with pytest.raises(MetaPropertiesError, match="not the configured"):
        ensure_meta_properties([tmp_path], 1, cluster_id="AAAAAAAAAAAAAAAAAAAAAQ")


def test_a_file_is_not_a_data_dir(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(MetaPropertiesError, match="is not a directory"):
        ensure_meta_properties([f], 1)


def test_random_ids_avoid_reserved_values() -> None:
    for _ in range(2000):
        text = random_uuid_text()
        assert len(text) == 22
        assert not text.startswith("-")
        assert text not in ("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ")
