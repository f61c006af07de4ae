"""The span module against a slow, obviously correct loop (per example, per span, plain torch ops)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

from spanft.errors import SpanftError
from spanft.model.span_model import (
    ENCODERS,
    HEADS,
    SegmentConv,
    SpanConfig,
    SpanModel,
    clip_regression,
    masked_max,
    predictions_from_logits,
    segment_max,
    segment_sum,
    token_span_ids,
)

HIDDEN = 16


def tiny_bert(pooler: bool = True) -> BertModel:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=60, hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    return BertModel(config, add_pooling_layer=pooler)


def make_model(backbone=None, **kwargs) -> SpanModel:
    kwargs.setdefault("dropout", 0.0)
    torch.manual_seed(1)
    model = SpanModel(backbone if backbone is not None else tiny_bert(), SpanConfig(**kwargs))
    for p in model.parameters():  # non-trivial biases too
        torch.nn.init.normal_(p, std=0.3)
    return model.eval()


def random_batch(seed: int, batch: int = 4, seq_len: int = 14, max_span_len: int = 4):
    """Mixed lengths; contiguous spans of 1..max_span_len pieces, some tokens left uncovered (as after the
    max_span_len / max_spans limits), padded spans at the tail, one example with no span at all."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, seq_len + 1, batch)
    lengths[0] = seq_len
    input_ids = torch.from_numpy(rng.integers(1, 60, (batch, seq_len)))
    attention_mask = torch.from_numpy((np.arange(seq_len) < lengths[:, None]).astype(np.int64))
    span_lists = []
    for b, n in enumerate(lengths):
        spans, position = [], 0
        while position < n:
            width = int(rng.integers(1, max_span_len + 1))
            covered = min(width, n - position, int(rng.integers(1, max_span_len + 1)))  # pieces past a limit
            spans.append((position, covered))
            position += width
        if rng.random() < 0.3:
            spans = spans[: max(1, len(spans) // 2)]  # spans past max_spans dropped
        span_lists.append([] if b == batch - 1 and batch > 2 else spans)
    n_spans = max(1, max(len(s) for s in span_lists))
    starts = torch.zeros(batch, n_spans, dtype=torch.long)
    span_lengths = torch.zeros(batch, n_spans, dtype=torch.long)
    for b, spans in enumerate(span_lists):
        for s, (start, length) in enumerate(spans):
            starts[b, s], span_lengths[b, s] = start, length
    return input_ids, attention_mask, starts, span_lengths


# ---------------------------------------------------------------------------------------------------------
# The slow reference


def ref_attention(pool, x: torch.Tensor) -> torch.Tensor:
    """Lin et al. 2017 one hop over the rows of x [n, D]."""
    weights = torch.softmax(pool.score(torch.tanh(pool.proj(x))).squeeze(-1), dim=0)
    return (weights[:, None] * x).sum(0)


def ref_conv_max(conv: torch.nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """Conv1d + ReLU + max over the rows of x [n, D] alone (zero padding from the Conv1d itself)."""
    return F.relu(conv(x.T.unsqueeze(0)))[0].max(dim=1).values


def ref_span_vectors(model: SpanModel, hidden: torch.Tensor, starts, lengths) -> list[torch.Tensor]:
    within = model.span_encoder.within
    vectors = []
    for start, length in zip(starts.tolist(), lengths.tolist()):
        length = min(length, model.span_config.max_span_len)  # pieces past the limit are not looked at
        if length == 0:
            continue
        pieces = hidden[start : start + length]
        if model.span_config.within == "cnn":
            vectors.append(ref_conv_max(within.conv, pieces))
        else:
            vectors.append(ref_attention(within, pieces))
    return vectors


def ref_sentence_vector(model: SpanModel, hidden, mask, starts, lengths) -> torch.Tensor:
    config, encoder = model.span_config, model.span_encoder
    if config.segmentation == "none":
        tokens = hidden[mask.bool()]
        first = F.relu(encoder.within.conv(tokens.T.unsqueeze(0)))[0].T
        return ref_conv_max(encoder.across.conv, first)
    spans = ref_span_vectors(model, hidden, starts, lengths)
    if not spans:
        return torch.zeros(hidden.size(-1))
    spans = torch.stack(spans)
    if config.across == "max":
        return spans.max(dim=0).values
    if config.across == "cnn":
        return ref_conv_max(encoder.across.conv, spans)
    return ref_attention(encoder.across, spans)


def ref_token_span_vectors(model: SpanModel, hidden, mask, starts, lengths) -> torch.Tensor:
    config = model.span_config
    out = torch.zeros_like(hidden)
    if config.segmentation == "none":
        n = int(mask.sum())
        out[:n] = F.relu(model.span_encoder.within.conv(hidden[:n].T.unsqueeze(0)))[0].T
        return out
    for start, length in zip(starts.tolist(), lengths.tolist()):
        length = min(length, model.span_config.max_span_len)
        if length:
            (vector,) = ref_span_vectors(model, hidden, torch.tensor([start]), torch.tensor([length]))
            out[start : start + length] = vector
    return out


def ref_logits(model: SpanModel, input_ids, attention_mask, starts, lengths) -> torch.Tensor:
    config = model.span_config
    out = model.backbone(input_ids=input_ids, attention_mask=attention_mask)
    rows = []
    for b in range(input_ids.size(0)):
        hidden = out.last_hidden_state[b]
        if config.is_tagging:
            parts = [] if config.head == "span-only" else [hidden]
            if config.head != "cls-only":
                parts.append(ref_token_span_vectors(model, hidden, attention_mask[b], starts[b], lengths[b]))
        else:
            parts = []
            if config.head != "cls-only":
                parts.append(ref_sentence_vector(model, hidden, attention_mask[b], starts[b], lengths[b]))
            if config.head != "span-only":
                parts.append(hidden[0] if config.cls_vector == "hidden" else out.pooler_output[b])
        rows.append(model.classifier(torch.cat(parts, dim=-1)))
    return torch.stack(rows)


# ---------------------------------------------------------------------------------------------------------
# Vectorised == loop


CASES = [
    dict(encoder=encoder, head=head, task_type=task_type)
    for encoder, head, task_type in itertools.product(ENCODERS, HEADS, ["single", "regression", "tagging"])
] + [
    dict(segmentation="none", head="concat", task_type="pair"),
    dict(segmentation="none", head="span-only", task_type="tagging"),
    dict(cls_vector="pooler", head="concat", task_type="pair"),
    dict(kernel_size=5, head="span-only", task_type="single"),
    dict(kernel_size=1, encoder="cnn-max", head="concat", task_type="tagging"),
    dict(max_span_len=2, head="span-only", task_type="single"),
    dict(max_span_len=2, encoder="attention-max", head="concat", task_type="tagging"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_forward_matches_loop(case):
    num_labels = 1 if case["task_type"] == "regression" else 3
    model = make_model(num_labels=num_labels, **case)
    for seed in range(3):
        input_ids, attention_mask, starts, lengths = random_batch(seed)
        with torch.no_grad():
            got = model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths).logits
            want = ref_logits(model, input_ids, attention_mask, starts, lengths)
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("task_type", ["single", "tagging"])
def test_gradients_match_loop(encoder, task_type):
    """The backward pass of the batched module equals the loop's, for every parameter."""
    model = make_model(encoder=encoder, task_type=task_type, num_labels=3)
    input_ids, attention_mask, starts, lengths = random_batch(7)
    weights = torch.linspace(-1.0, 1.0, 3)  # a loss that reaches every logit

    def grads(logits):
        model.zero_grad()
        (logits * weights).sum().backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    got = grads(model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths).logits)
    want = grads(ref_logits(model, input_ids, attention_mask, starts, lengths))
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], atol=1e-4, rtol=1e-4, msg=name)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), seq_len=st.integers(1, 12))
def test_token_span_ids_against_a_loop(data, seq_len):
    """Non-overlapping spans in any order, padded spans of length 0 anywhere, tokens left uncovered."""
    cuts = sorted(data.draw(st.sets(st.integers(0, seq_len), max_size=seq_len + 1)) | {0, seq_len})
    ranges = [(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])]
    kept = [r for r in ranges if data.draw(st.booleans())]  # dropped ranges: tokens in no span
    kept += [(data.draw(st.integers(0, seq_len)), 0) for _ in range(data.draw(st.integers(0, 2)))]
    order = data.draw(st.permutations(range(len(kept)))) if kept else []
    spans = [kept[i] for i in order] or [(0, 0)]
    starts = torch.tensor([[a for a, _ in spans]])
    lengths = torch.tensor([[n for _, n in spans]])
    want = [-1] * seq_len
    for s, (a, n) in enumerate(spans):
        for t in range(a, a + n):
            want[t] = s
    assert token_span_ids(starts, lengths, seq_len)[0].tolist() == want


@settings(max_examples=40, deadline=None)
@given(ids=st.lists(st.integers(-1, 3), min_size=1, max_size=10), spans=st.integers(1, 5))
def test_segment_max_and_sum_against_a_loop(ids, spans):
    ids = [i if i < spans else -1 for i in ids]
    torch.manual_seed(len(ids))
    x = torch.randn(1, len(ids), 3)
    got_max = segment_max(x, torch.tensor([ids]), spans)[0]
    got_sum = segment_sum(x, torch.tensor([ids]), spans)[0]
    for s in range(spans):
        members = [t for t, i in enumerate(ids) if i == s]
        want_max = x[0, members].max(dim=0).values if members else torch.zeros(3)
        torch.testing.assert_close(got_max[s], want_max)
        torch.testing.assert_close(got_sum[s], x[0, members].sum(dim=0), atol=1e-6, rtol=1e-5)


def test_spans_shorter_than_kernel_and_single_span():
    """Spans of 1 and 2 pieces with kernel 3 and 5; an example whose only span is one piece."""
    input_ids = torch.randint(1, 60, (2, 6))
    attention_mask = torch.ones(2, 6, dtype=torch.long)
    starts = torch.tensor([[0, 1, 3, 5], [0, 0, 0, 0]])
    lengths = torch.tensor([[1, 2, 2, 1], [1, 0, 0, 0]])
    for kernel in (3, 5):
        model = make_model(kernel_size=kernel, head="span-only")
        with torch.no_grad():
            got = model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths).logits
        want = ref_logits(model, input_ids, attention_mask, starts, lengths)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_example_alone_equals_example_in_padded_batch():
    """Padding tokens and padded spans added by batching change nothing."""
    model = make_model(encoder="attention-attention", head="concat")
    input_ids, attention_mask, starts, lengths = random_batch(5)
    with torch.no_grad():
        batched = model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths).logits
        for b in range(input_ids.size(0)):
            n_tokens, n_spans = int(attention_mask[b].sum()), max(1, int((lengths[b] > 0).sum()))
            alone = model(
                input_ids[b : b + 1, :n_tokens], attention_mask[b : b + 1, :n_tokens],
                span_starts=starts[b : b + 1, :n_spans], span_lengths=lengths[b : b + 1, :n_spans],
            ).logits
            torch.testing.assert_close(alone[0], batched[b], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("encoder", ENCODERS)
def test_tokens_outside_spans_do_not_matter(encoder):
    """Changing a token vector that no span covers (or a padded one) leaves the span vector unchanged."""
    model = make_model(encoder=encoder, head="span-only")
    _, attention_mask, starts, lengths = random_batch(2)
    hidden = torch.randn(attention_mask.shape + (HIDDEN,))
    covered = torch.zeros(attention_mask.shape, dtype=torch.bool)
    for b, s in itertools.product(range(starts.size(0)), range(starts.size(1))):
        covered[b, starts[b, s] : starts[b, s] + lengths[b, s]] = True
    assert (~covered).any()
    before = model.span_encoder.classify_features(hidden, attention_mask, starts, lengths)
    after = model.span_encoder.classify_features(
        hidden + 100.0 * torch.randn_like(hidden) * (~covered).unsqueeze(-1), attention_mask, starts, lengths
    )
    torch.testing.assert_close(before, after)


# ---------------------------------------------------------------------------------------------------------
# Building blocks


@settings(max_examples=60, deadline=None)
@given(
    segments=st.lists(st.integers(-1, 6), min_size=1, max_size=10),
    kernel=st.sampled_from([1, 3, 5]),
)
def test_segment_conv_equals_conv1d_per_segment(segments, kernel):
    """Runs of length >= 0 with segment id >= 0, or an uncovered token (-1); each run convolved alone."""
    ids, current = [], 0
    for width in segments:
        if width < 0:
            ids.append(-1)
        else:
            ids.extend([current] * width)
            current += 1
    if not ids:
        ids = [-1]
    torch.manual_seed(len(ids))
    layer = SegmentConv(HIDDEN, kernel)
    x = torch.randn(1, len(ids), HIDDEN)
    got = layer(x, torch.tensor([ids]))[0]
    for segment in set(ids) - {-1}:
        positions = [i for i, s in enumerate(ids) if s == segment]
        want = layer.conv(x[0, positions].T.unsqueeze(0))[0].T
        torch.testing.assert_close(got[positions], want, atol=1e-5, rtol=1e-4)


def test_masked_max_ignores_padding_and_gives_zeros_when_empty():
    x = torch.tensor(
        [[[-3.0, 1.0], [50.0, 50.0], [-1.0, -2.0]], [[7.0, 7.0], [8.0, 8.0], [9.0, 9.0]]], requires_grad=True
    )
    mask = torch.tensor([[True, False, True], [False, False, False]])
    out = masked_max(x, mask)
    assert out.tolist() == [[-1.0, 1.0], [0.0, 0.0]]
    out.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert x.grad.tolist() == [[[0, 1], [0, 0], [1, 0]], [[0, 0], [0, 0], [0, 0]]]


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("task_type", ["pair", "tagging"])
def test_gradients_flow_without_nan(encoder, task_type):
    model = make_model(encoder=encoder, task_type=task_type, num_labels=3).train()
    input_ids, attention_mask, starts, lengths = random_batch(3)  # includes an example with no span
    labels = torch.randint(0, 3, input_ids.shape) if task_type == "tagging" else torch.tensor([0, 1, 2, 1])
    loss = model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths, labels=labels).loss
    loss.backward()
    for name, p in model.named_parameters():
        if name.startswith("backbone.pooler"):
            continue  # cls_vector "hidden" does not use the pooler
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        if not name.startswith("backbone."):
            assert p.grad.abs().sum() > 0, name


# ---------------------------------------------------------------------------------------------------------
# Losses, predictions, parameter counts, errors


def test_losses_against_hand_computations():
    model = make_model(head="cls-only", num_labels=3)
    input_ids, attention_mask, _, _ = random_batch(0)
    labels = torch.tensor([2, -1, 0, -1])  # -1: unlabeled test rows are ignored
    out = model(input_ids, attention_mask, labels=labels)
    want = F.cross_entropy(out.logits[[0, 2]], torch.tensor([2, 0]))
    torch.testing.assert_close(out.loss, want)
    all_unlabeled = model(input_ids, attention_mask, labels=torch.full((4,), -1)).loss
    assert all_unlabeled.item() == 0.0

    model = make_model(head="cls-only", num_labels=1, task_type="regression")
    scores = torch.tensor([4.5, float("nan"), 0.25, 3.0])
    out = model(input_ids, attention_mask, labels=scores)
    keep = [0, 2, 3]
    torch.testing.assert_close(out.loss, ((out.logits[keep, 0] - scores[keep]) ** 2).mean())


def test_tagging_loss_ignores_minus_100():
    model = make_model(head="concat", num_labels=3, task_type="tagging")
    input_ids, attention_mask, starts, lengths = random_batch(1)
    labels = torch.full(input_ids.shape, -100)
    labels[0, 1], labels[2, 0] = 2, 1
    out = model(input_ids, attention_mask, span_starts=starts, span_lengths=lengths, labels=labels)
    want = F.cross_entropy(torch.stack([out.logits[0, 1], out.logits[2, 0]]), torch.tensor([2, 1]))
    torch.testing.assert_close(out.loss, want)


def test_predictions_from_logits():
    assert clip_regression(np.array([[-0.5], [2.0], [7.0]])).tolist() == [0.0, 2.0, 5.0]
    assert predictions_from_logits(np.array([[6.0], [1.5]]), "regression").tolist() == [5.0, 1.5]
    assert predictions_from_logits(np.array([[0.1, 0.9], [2.0, -1.0]]), "pair").tolist() == [1, 0]
    assert predictions_from_logits(np.zeros((2, 5, 3)), "tagging").shape == (2, 5)


def test_parameter_overhead_at_bert_base_size():
    torch.manual_seed(0)
    backbone = BertModel(BertConfig())  # bert-base shapes, random init, no download
    hidden = backbone.config.hidden_size
    full = SpanModel(backbone, SpanConfig(num_labels=3, task_type="pair"))
    conv = hidden * hidden * 3 + hidden
    assert full.span_module_parameter_count() == 2 * conv
    assert full.extra_parameter_count() == 2 * conv + 2 * hidden * 3 + 3
    assert full.backbone_parameter_count() == sum(p.numel() for p in backbone.parameters())
    ratio = full.extra_parameter_count() / full.backbone_parameter_count()
    assert 0.025 < ratio <= 0.035, ratio
    noseg = SpanModel(backbone, SpanConfig(num_labels=3, task_type="pair", segmentation="none"))
    assert noseg.extra_parameter_count() == full.extra_parameter_count()
    baseline = SpanModel(backbone, SpanConfig(num_labels=3, task_type="pair", head="cls-only"))
    assert baseline.span_module_parameter_count() == 0
    assert baseline.extra_parameter_count() == hidden * 3 + 3
    for encoder in ENCODERS:
        model = SpanModel(backbone, SpanConfig(encoder=encoder, num_labels=3, task_type="pair"))
        assert model.extra_parameter_count() / model.backbone_parameter_count() <= 0.035


def test_roberta_backbone_and_pooler_choice():
    torch.manual_seed(0)
    roberta = RobertaModel(RobertaConfig(
        vocab_size=60, hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=70, pad_token_id=1, type_vocab_size=1,
    ))
    model = make_model(roberta, cls_vector="pooler", task_type="pair")
    input_ids, attention_mask, starts, lengths = random_batch(4)
    with torch.no_grad():
        got = model(input_ids.clamp(min=2), attention_mask, span_starts=starts, span_lengths=lengths).logits
        want = ref_logits(model, input_ids.clamp(min=2), attention_mask, starts, lengths)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    with pytest.raises(SpanftError, match="has no pooler"):
        SpanModel(tiny_bert(pooler=False), SpanConfig(cls_vector="pooler"))
    SpanModel(tiny_bert(pooler=False), SpanConfig(cls_vector="pooler", head="span-only"))  # pooler unused


def test_config_and_input_errors():
    with pytest.raises(SpanftError, match="encoder: unknown value 'cnn-lstm'"):
        SpanConfig(encoder="cnn-lstm")
    with pytest.raises(SpanftError, match="kernel_size"):
        SpanConfig(kernel_size=4)
    with pytest.raises(SpanftError, match="regression task has 1 output"):
        SpanConfig(task_type="regression", num_labels=2)
    with pytest.raises(SpanftError, match="needs a cnn encoder"):
        SpanConfig(segmentation="none", encoder="attention-max")
    model = make_model()
    input_ids, attention_mask, _, _ = random_batch(0)
    with pytest.raises(SpanftError, match="needs span_starts"):
        model(input_ids, attention_mask)
    assert make_model(segmentation="none")(input_ids, attention_mask).logits.shape == (4, 2)
