"""What --fit's CPU rules hold in RAM, in words (review17c finding 9). common/fit.cpp writes two kinds of CPU rule:
a MOE one, `blk\\.N\\.ffn_(up|down|gate_up|gate)_(ch|)exps`, that moves only the layer's routed experts, and the
UP / GATE fractions, `blk\\.N\\.ffn_(gate|gate_up|down).*` / `blk\\.N\\.ffn_down.*`, that move those projections of
every kind (dense and shared too). One layer is "1 layer"."""

from runlocal.runtimes.llamacpp import _held_in_ram


def test_a_fraction_rule_is_not_called_experts_and_one_layer_is_singular():
    assert _held_in_ram(((r"blk\.39\.ffn_(gate|gate_up|down).*", "CPU"),)) == \
        "part of the feed-forward weights of 1 layer"


def test_moe_rules_are_experts_and_both_kinds_are_said():
    rules = ((r"blk\.(3|4)\.ffn_(up|down|gate_up|gate)_(ch|)exps", "CPU"), (r"blk\.5\.ffn_down.*", "CPU"),
             (r"blk\.19\.ffn_down.*", "CUDA1"))
    assert _held_in_ram(rules) == "the experts of 2 layers and part of the feed-forward weights of 1 layer"
