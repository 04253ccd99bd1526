"""``pipeline.session``: what ksteward sets on a session, by master, and what it leaves to the site."""

from __future__ import annotations

from pathlib import Path

from ksteward.pipeline.session import LOCAL_DEFAULTS, session_settings, site_defaults


def test_a_cluster_master_gets_the_time_zone_only() -> None:
    for master in ("spark://127.0.0.1:7077", "yarn", "k8s://https://api:6443"):
        assert session_settings(master, {}) == {"spark.sql.session.timeZone": "UTC"}, master


def test_local_masters_get_the_local_defaults_the_site_has_not_set() -> None:
    for master in ("local", "local[2]", "local[*]"):
        assert session_settings(master, {}) == LOCAL_DEFAULTS | {"spark.sql.session.timeZone": "UTC"}
    site = {"spark.driver.memory": "16g", "spark.driver.extraJavaOptions": "-Dsite=1"}
    chosen = session_settings("local[*]", site)
    assert "spark.driver.memory" not in chosen and "spark.driver.extraJavaOptions" not in chosen
    assert chosen["spark.sql.shuffle.partitions"] == LOCAL_DEFAULTS["spark.sql.shuffle.partitions"]
    # The time zone is not the site's to choose: the jobs' days and hours are UTC ones.
    assert (
        session_settings("local[*]", {"spark.sql.session.timeZone": "Asia/Kolkata"})["spark.sql.session.timeZone"]
        == "UTC"
    )


def test_site_defaults_read_spark_defaults_conf(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(
        "# the site's settings\nspark.driver.memory   16g\n\nspark.driver.extraJavaOptions -Da=1 -Db=2\n"
    )
    assert site_defaults({"SPARK_CONF_DIR": str(tmp_path)}) == {
        "spark.driver.memory": "16g",
        "spark.driver.extraJavaOptions": "-Da=1 -Db=2",
    }
    assert site_defaults({"SPARK_HOME": str(tmp_path / "nowhere")}) == {}
    assert site_defaults({}) == {}
