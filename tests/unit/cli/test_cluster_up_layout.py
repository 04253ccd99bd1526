"""``ksteward cluster up --controllers N``'s layout: which node is what, on which port, with which quorum keys."""

from __future__ import annotations

from pathlib import Path

from ksteward.cli.cluster import node_properties, plan_nodes
from ksteward.cli.main import build_parser


def test_one_controller_keeps_the_layout_it_always_had(tmp_path: Path) -> None:
    nodes = plan_nodes(tmp_path, 3, 9092)
    assert [(n.node_id, n.role, n.port, n.directory.name) for n in nodes] == [
        (1, "controller", 9095, "controller-1"),
        (2, "broker", 9092, "broker-2"),
        (3, "broker", 9093, "broker-3"),
        (4, "broker", 9094, "broker-4"),
    ]
    controllers = nodes[:1]
    assert node_properties(nodes[0], controllers, "c")["controller.quorum.voters"] == "1@127.0.0.1:9095"
    broker = node_properties(nodes[1], controllers, "c")
    assert (broker["controller.quorum.bootstrap.servers"], "controller.quorum.voters" in broker) == (
        "127.0.0.1:9095",
        False,
    )


def test_three_controllers_are_all_voters_and_the_brokers_know_them_all(tmp_path: Path) -> None:
    nodes = plan_nodes(tmp_path, 2, 19092, controllers=3)
    assert [(n.node_id, n.role, n.port) for n in nodes] == [
        (1, "controller", 19094),
        (2, "controller", 19095),
        (3, "controller", 19096),
        (4, "broker", 19092),
        (5, "broker", 19093),
    ]
    controllers = nodes[:3]
    voters = "1@127.0.0.1:19094,2@127.0.0.1:19095,3@127.0.0.1:19096"
    for controller in controllers:
        props = node_properties(controller, controllers, "c")
        assert (props["process.roles"], props["controller.quorum.voters"]) == ("controller", voters)
        assert props["listeners"] == f"CONTROLLER://127.0.0.1:{controller.port}"
    broker = node_properties(nodes[3], controllers, "c")
    assert broker["controller.quorum.voters"] == voters  # the leader's id is mapped to its address
    assert broker["controller.quorum.bootstrap.servers"] == "127.0.0.1:19094,127.0.0.1:19095,127.0.0.1:19096"


def test_controllers_is_a_flag_of_up_with_default_one() -> None:
    parser = build_parser()
    assert parser.parse_args(["cluster", "up"]).controllers == 1
    assert parser.parse_args(["cluster", "up", "--controllers", "3", "--brokers", "3"]).controllers == 3


def test_combined_controllers_serve_clients_first_and_list_their_controller_listeners_as_voters(tmp_path: Path) -> None:
    nodes = plan_nodes(tmp_path, 1, 9092, controllers=3, combined=True)
    assert [(n.node_id, n.role, n.port, n.controller_port) for n in nodes] == [
        (1, "broker,controller", 9092, 9096),
        (2, "broker,controller", 9093, 9097),
        (3, "broker,controller", 9094, 9098),
        (4, "broker", 9095, None),
    ]
    controllers = nodes[:3]
    voters = "1@127.0.0.1:9096,2@127.0.0.1:9097,3@127.0.0.1:9098"
    props = node_properties(nodes[0], controllers, "c")
    assert (props["process.roles"], props["controller.quorum.voters"]) == ("broker,controller", voters)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9096"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    broker = node_properties(nodes[3], controllers, "c")
    assert broker["controller.quorum.bootstrap.servers"] == "127.0.0.1:9096,127.0.0.1:9097,127.0.0.1:9098"
    assert build_parser().parse_args(["cluster", "up", "--combined", "--brokers", "0"]).combined
