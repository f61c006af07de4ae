"""The span fine-tuning module on top of any Hugging Face encoder (nanoGPT style: one readable file).

Shapes: B batch, T tokens, S spans (padded), D hidden size, C labels.

How a sentence vector is built (encoder "cnn-cnn", segmentation "spans"):
  1. the backbone gives token vectors H [B, T, D];
  2. within each span: Conv1d(D -> D, kernel k, zero padding k//2) + ReLU, then max-pool over the span's real
     pieces -> span vectors [B, S, D];
  3. across spans: the same again over the real spans -> sentence vector s [B, D];
  4. the head joins s with the [CLS] vector (or uses one of them) and classifies.

Padding never takes part. The convolution sees only the span itself, padded with zeros to the kernel width
(a span of one or two pieces works), never a neighbouring span or a padded position: this is what a per-span
``Conv1d(padding=k//2)`` does. It is computed once on the token sequence (``SegmentConv``): every window
position that lies outside the centre token's span is zeroed before one matmul. Spans are contiguous, non-overlapping sub-token ranges (as ``spanft.features`` builds them), so this equals
running the Conv1d span by span, at T positions instead of S x L. The max-pool within spans is one scatter-max
from tokens into their span's slot (``segment_max``): every tensor stays [B, T, D] or [B, S, D], with no Python
loop over spans or sentences and no read of the batch's lengths back to the host, which keeps ``sf`` close to
the baseline's step time. A span (or example) with nothing real pools to zeros. Across spans, padded spans
(length 0, at the tail of each row as ``SpanCollator`` pads) are masked before the max-pool.

Tagging (NER) has no across-span pooling: each token gets its span's vector (zeros outside every span), joined
with its own vector, then a token classifier. ``segmentation: none`` (the "+CNN" ablation) runs the same conv
layers over all real tokens as one sequence (classification: conv, conv, max over tokens; same parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import (
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from spanft.errors import SpanftError
from spanft.params.hparams import HPARAM_FIELDS

ENCODERS = ("cnn-cnn", "cnn-max", "attention-max", "attention-attention")
HEADS = ("concat", "span-only", "cls-only")
CLS_VECTORS = HPARAM_FIELDS["cls_vector"].metadata["choices"]  # hidden, pooler: the hyper-parameter's choices
SEGMENTATIONS = ("spans", "none")
TASK_TYPES = ("single", "pair", "regression", "tagging")
REGRESSION_RANGE = (0.0, 5.0)  # STS-B scores


@dataclass
class SpanConfig:
    """What to put on top of the backbone. ``cls-only`` is plain fine-tuning (no span module)."""

    encoder: str = "cnn-cnn"  # "<within spans>-<across spans>"
    head: str = "concat"
    cls_vector: str = "hidden"  # hidden: last_hidden_state[:, 0]; pooler: pooler_output
    segmentation: str = "spans"  # none: the "+CNN" ablation, the same two CNN layers over all tokens
    kernel_size: int = 3
    num_labels: int = 2
    task_type: str = "single"
    dropout: float = 0.1
    attention_dim: int = 350  # d_a of the self-attentive pooling (Lin et al. 2017)
    max_span_len: int = 16  # pieces per span looked at: set it to the features' max_span_len

    def __post_init__(self) -> None:
        for key, value, allowed in (
            ("encoder", self.encoder, ENCODERS),
            ("head", self.head, HEADS),
            ("cls_vector", self.cls_vector, CLS_VECTORS),
            ("segmentation", self.segmentation, SEGMENTATIONS),
            ("task_type", self.task_type, TASK_TYPES),
        ):
            if value not in allowed:
                raise SpanftError(f"{key}: unknown value {value!r} (valid: {', '.join(allowed)})")
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise SpanftError(f"kernel_size: must be a positive odd number, got {self.kernel_size}")
        if self.max_span_len < 1:
            raise SpanftError(f"max_span_len: must be >= 1, got {self.max_span_len}")
        if self.num_labels < 1:
            raise SpanftError(f"num_labels: must be >= 1, got {self.num_labels}")
        if self.task_type == "regression" and self.num_labels != 1:
            raise SpanftError(f"num_labels: a regression task has 1 output, got {self.num_labels}")
        if not 0.0 <= self.dropout < 1.0:
            raise SpanftError(f"dropout: must be in [0, 1), got {self.dropout}")
        if self.segmentation == "none" and self.uses_span_module and not self.encoder.startswith("cnn"):
            raise SpanftError(f"segmentation none (the +CNN ablation) needs a cnn encoder, got {self.encoder!r}")

    @property
    def within(self) -> str:
        return self.encoder.split("-")[0]

    @property
    def across(self) -> str:
        return self.encoder.split("-")[1]

    @property
    def uses_span_module(self) -> bool:
        return self.head != "cls-only"

    @property
    def needs_spans(self) -> bool:
        """True when forward needs ``span_starts`` / ``span_lengths``."""
        return self.uses_span_module and self.segmentation == "spans"

    @property
    def is_tagging(self) -> bool:
        return self.task_type == "tagging"


# ---------------------------------------------------------------------------------------------------------
# Building blocks


def token_span_ids(span_starts: torch.Tensor, span_lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Span index of every token [B, T]; -1 for tokens in no span (specials are spans; padding is not).

    Spans do not overlap, so a running sum of +(s + 1) at each span's start and -(s + 1) at its end is s + 1
    inside span s and 0 elsewhere, whatever the order of the spans; a padded span (length 0) adds nothing.
    """
    batch, spans = span_starts.shape
    label = torch.arange(1, spans + 1, device=span_starts.device).expand(batch, spans)
    starts = span_starts.clamp(0, seq_len)
    ends = (span_starts + span_lengths).clamp(0, seq_len)
    delta = torch.zeros(batch, seq_len + 1, dtype=torch.long, device=span_starts.device)
    delta.scatter_add_(1, starts, label).scatter_add_(1, ends, -label)
    return delta.cumsum(dim=1)[:, :seq_len] - 1


def _slots(span_ids: torch.Tensor, spans: int) -> torch.Tensor:
    """Scatter target of every token: its span, or a spare slot ``spans`` (cut off afterwards) when in none."""
    return torch.where(span_ids >= 0, span_ids, spans)


def segment_max(x: torch.Tensor, span_ids: torch.Tensor, spans: int) -> torch.Tensor:
    """Max over each span's tokens: x [B, T, D], span ids [B, T] -> [B, S, D]; zeros for a span with no token."""
    index = _slots(span_ids, spans).unsqueeze(-1).expand_as(x)
    out = x.new_zeros(x.size(0), spans + 1, x.size(-1))
    return out.scatter_reduce_(1, index, x, reduce="amax", include_self=False)[:, :spans]


def segment_sum(x: torch.Tensor, span_ids: torch.Tensor, spans: int) -> torch.Tensor:
    """Sum over each span's tokens: x [B, T, ...], span ids [B, T] -> [B, S, ...]."""
    slots = _slots(span_ids, spans)
    index = slots.view(*slots.shape, *([1] * (x.dim() - 2))).expand_as(x)
    out = x.new_zeros(x.size(0), spans + 1, *x.shape[2:])
    return out.scatter_add_(1, index, x)[:, :spans]


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Max over dim -2 of x [..., N, D] among real entries mask [..., N]; zeros where nothing is real."""
    best = x.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(dim=-2)
    return torch.where(mask.any(dim=-1, keepdim=True), best, torch.zeros_like(best))


class SegmentConv(nn.Module):
    """Conv1d(D -> D, kernel k, padding k//2) run on each segment alone, computed on the whole sequence.

    x [B, N, D] and segment ids [B, N] (-1 = no segment). Window position j of output n holds x[n + j - k//2]
    only when that input lies in n's segment, else 0: a zero-padded convolution of every segment by itself.
    The weights live in an ``nn.Conv1d`` so a per-segment reference can use them as they are.
    """

    def __init__(self, hidden: int, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(hidden, hidden, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        k, half = self.conv.kernel_size[0], self.conv.kernel_size[0] // 2
        batch, length, hidden = x.shape
        windows = F.pad(x, (0, 0, half, half)).unfold(1, k, 1)  # [B, N, D, k], a view
        window_ids = F.pad(segment_ids, (half, half), value=-1).unfold(1, k, 1)  # [B, N, k]
        same = (window_ids == segment_ids.unsqueeze(-1)) & (segment_ids >= 0).unsqueeze(-1)  # [B, N, k]
        windows = windows * same.unsqueeze(2)  # zero what the per-segment conv would not see
        weight = self.conv.weight.reshape(hidden, hidden * k)  # [D_out, D_in * k], same (D_in, k) order
        return F.linear(windows.reshape(batch, length, hidden * k), weight, self.conv.bias)  # [B, N, D]


class AttentivePooling(nn.Module):
    """Self-attentive pooling (Lin et al. 2017, one hop): a = softmax(w2 tanh(W1 h)), sum_n a_n h_n."""

    def __init__(self, hidden: int, attention_dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden, attention_dim, bias=False)  # W1
        self.score = nn.Linear(attention_dim, 1, bias=False)  # w2

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., D] -> unnormalised attention scores [...]."""
        return self.score(torch.tanh(self.proj(x))).squeeze(-1)

    def pool(self, x: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Weighted sum over dim -2 of x [..., N, D] with scores/mask [..., N]; zeros where nothing is real."""
        has_any = mask.any(dim=-1, keepdim=True)
        # Rows with nothing real keep finite scores (a softmax over all -inf is NaN, also in the backward).
        scores = scores.masked_fill(~mask & has_any, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).to(x.dtype) * mask.to(x.dtype)  # [..., N]
        return (weights.unsqueeze(-1) * x).sum(dim=-2)

    def pool_segments(self, x: torch.Tensor, segment_ids: torch.Tensor, segments: int) -> torch.Tensor:
        """Weighted sum within each segment: x [B, N, D], segment ids [B, N] (-1: none) -> [B, S, D]."""
        scores = self.scores(x).float()  # [B, N]
        inside = segment_ids >= 0
        slots = segment_ids.clamp(min=0)
        # the softmax does not change when a constant is taken from a segment's scores: its max, for stability
        top = segment_max(scores.detach().unsqueeze(-1), segment_ids, segments).squeeze(-1)  # [B, S]
        shifted = torch.where(inside, scores - top.gather(1, slots), 0.0)  # <= 0 inside; no inf to mask out
        exp = torch.where(inside, torch.exp(shifted), 0.0)
        total = segment_sum(exp, segment_ids, segments)  # [B, S]; >= 1 for a segment with a token
        weights = exp / torch.where(inside, total.gather(1, slots), 1.0)
        return segment_sum(weights.to(x.dtype).unsqueeze(-1) * x, segment_ids, segments)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.pool(x, self.scores(x), mask)


class SpanEncoder(nn.Module):
    """The extra module: token vectors -> span vectors -> sentence vector (or span vectors back on tokens)."""

    def __init__(self, hidden: int, config: SpanConfig) -> None:
        super().__init__()
        self.config = config
        make = {
            "cnn": lambda: SegmentConv(hidden, config.kernel_size),
            "attention": lambda: AttentivePooling(hidden, config.attention_dim),
        }
        self.within = make[config.within]()
        # Tagging has no across-span pooling; "max" has no parameters.
        self.across = None if config.is_tagging or config.across == "max" else make[config.across]()

    def span_vectors(
        self, hidden: torch.Tensor, span_starts: torch.Tensor, span_lengths: torch.Tensor,
        span_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """H [B, T, D] -> span vectors [B, S, D], span mask [B, S], token -> span ids [B, T].

        ``span_ids`` may come with the batch (``SpanCollator`` builds them on the host, cut at the same
        ``max_span_len``), which spares the device the kernels that derive them from starts and lengths.
        """
        spans = span_starts.size(1)
        if span_ids is None:
            lengths = span_lengths.clamp(max=self.config.max_span_len)  # a longer span keeps its first pieces
            span_ids = token_span_ids(span_starts, lengths, hidden.size(1))  # [B, T]
        if isinstance(self.within, SegmentConv):
            vectors = segment_max(F.relu(self.within(hidden, span_ids)), span_ids, spans)
        else:
            vectors = self.within.pool_segments(hidden, span_ids, spans)
        return vectors, span_lengths > 0, span_ids

    def sentence_vector(self, spans: torch.Tensor, span_mask: torch.Tensor) -> torch.Tensor:
        """Span vectors [B, S, D] -> s [B, D]."""
        if self.across is None:
            return masked_max(spans, span_mask)
        if isinstance(self.across, SegmentConv):
            segment = torch.where(span_mask, 0, -1)  # all real spans form one sequence
            return masked_max(F.relu(self.across(spans, segment)), span_mask)
        return self.across(spans, span_mask)

    def classify_features(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor,
        span_starts: torch.Tensor | None, span_lengths: torch.Tensor | None, span_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sentence vector s [B, D]."""
        if self.config.segmentation == "none":  # +CNN: both conv layers over the token sequence
            segment = torch.where(attention_mask.bool(), 0, -1)  # [B, T]
            tokens = F.relu(self.within(hidden, segment))
            return self.sentence_vector(tokens, attention_mask.bool())
        spans, span_mask, _ = self.span_vectors(hidden, span_starts, span_lengths, span_ids)
        return self.sentence_vector(spans, span_mask)

    def token_features(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor,
        span_starts: torch.Tensor | None, span_lengths: torch.Tensor | None, span_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Each token's span vector [B, T, D] (zeros for tokens in no span)."""
        if self.config.segmentation == "none":
            segment = torch.where(attention_mask.bool(), 0, -1)
            return F.relu(self.within(hidden, segment)) * attention_mask.unsqueeze(-1).to(hidden.dtype)
        spans, _, span_ids = self.span_vectors(hidden, span_starts, span_lengths, span_ids)
        batch = torch.arange(hidden.size(0), device=hidden.device).unsqueeze(-1)
        scattered = spans[batch, span_ids.clamp(min=0)]  # [B, T, D]
        return scattered * (span_ids >= 0).unsqueeze(-1).to(spans.dtype)


# ---------------------------------------------------------------------------------------------------------
# The model


class SpanModel(nn.Module):
    """A backbone (``AutoModel``) with the span module and a classification / regression / tagging head."""

    def __init__(self, backbone: nn.Module, config: SpanConfig) -> None:
        super().__init__()
        self.backbone = backbone
        self.span_config = config
        self.config = backbone.config  # HF utilities (the Trainer) look for ``model.config``
        hidden = backbone.config.hidden_size
        uses_cls = config.head != "span-only" and not config.is_tagging
        if uses_cls and config.cls_vector == "pooler" and getattr(backbone, "pooler", None) is None:
            raise SpanftError(
                f"cls_vector: pooler, but the backbone {type(backbone).__name__} has no pooler; use cls_vector: hidden"
            )
        self.span_encoder = SpanEncoder(hidden, config) if config.uses_span_module else None
        in_features = hidden * (2 if config.head == "concat" else 1)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(in_features, config.num_labels)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        span_starts: torch.Tensor | None = None,
        span_lengths: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        span_ids: torch.Tensor | None = None,
    ) -> SequenceClassifierOutput | TokenClassifierOutput:
        config = self.span_config
        if config.needs_spans and (span_starts is None or span_lengths is None):
            raise SpanftError("this variant needs span_starts and span_lengths: encode the data with its spans")
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        out = self.backbone(**inputs)
        spans = (attention_mask, span_starts, span_lengths, span_ids)
        if config.is_tagging:
            logits = self.classifier(self.dropout(self._token_features(out.last_hidden_state, *spans)))  # [B, T, C]
            loss = None if labels is None else classification_loss(logits, labels)
            return TokenClassifierOutput(loss=loss, logits=logits)
        logits = self.classifier(self.dropout(self._sentence_features(out, *spans)))  # [B, C]
        loss = None
        if labels is not None:
            loss_fn = regression_loss if config.task_type == "regression" else classification_loss
            loss = loss_fn(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)

    def _sentence_features(self, out, attention_mask, span_starts, span_lengths, span_ids) -> torch.Tensor:
        head = self.span_config.head
        parts = []
        if head != "cls-only":
            hidden = out.last_hidden_state  # [B, T, D]
            parts.append(self.span_encoder.classify_features(hidden, attention_mask, span_starts, span_lengths,
                                                             span_ids))
        if head != "span-only":
            parts.append(self._cls_vector(out))
        return torch.cat(parts, dim=-1)  # [B, D] or [B, 2D]

    def _cls_vector(self, out) -> torch.Tensor:
        if self.span_config.cls_vector == "hidden":
            return out.last_hidden_state[:, 0]
        if getattr(out, "pooler_output", None) is None:
            raise SpanftError("cls_vector: pooler, but the backbone returned no pooler_output; use cls_vector: hidden")
        return out.pooler_output

    def _token_features(self, hidden, attention_mask, span_starts, span_lengths, span_ids) -> torch.Tensor:
        head = self.span_config.head
        parts = []
        if head != "span-only":
            parts.append(hidden)
        if head != "cls-only":
            parts.append(self.span_encoder.token_features(hidden, attention_mask, span_starts, span_lengths, span_ids))
        return torch.cat(parts, dim=-1)  # [B, T, D] or [B, T, 2D]

    def backbone_parameter_count(self) -> int:
        return sum(p.numel() for p in self.backbone.parameters())

    def extra_parameter_count(self) -> int:
        """Parameters outside the backbone: the span module and the classifier."""
        return sum(p.numel() for name, p in self.named_parameters() if not name.startswith("backbone."))

    def span_module_parameter_count(self) -> int:
        return 0 if self.span_encoder is None else sum(p.numel() for p in self.span_encoder.parameters())


# ---------------------------------------------------------------------------------------------------------
# Losses and predictions


def classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over labelled positions (label < 0, e.g. -1 unlabeled or -100, is ignored).

    Mean over what is labelled, and 0 (not NaN) when nothing is: prediction on an unlabeled test split works.
    """
    logits = logits.reshape(-1, logits.size(-1)).float()
    labels = labels.reshape(-1).long()
    valid = labels >= 0
    losses = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
    return (losses * valid).sum() / valid.sum().clamp(min=1)


def regression_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean squared error over labelled examples (NaN = unlabeled is ignored)."""
    predictions = logits.reshape(-1).float()
    labels = labels.reshape(-1).float()
    valid = ~torch.isnan(labels)
    errors = (predictions - torch.nan_to_num(labels)) ** 2
    return (errors * valid).sum() / valid.sum().clamp(min=1)


def clip_regression(predictions: np.ndarray) -> np.ndarray:
    """STS-B predictions clipped to the score range [0, 5]."""
    return np.clip(np.asarray(predictions, dtype=np.float64).reshape(-1), *REGRESSION_RANGE)


def predictions_from_logits(logits: np.ndarray, task_type: str) -> np.ndarray:
    """Regression: clipped scores [N]; classification: class ids [N]; tagging: tag ids [N, T]."""
    if task_type == "regression":
        return clip_regression(logits)
    return np.asarray(logits).argmax(axis=-1)
