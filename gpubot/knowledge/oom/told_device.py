"""An out-of-memory told only in words, placed on the card or on the host by what the lines
around it name.

Threads and chat often say no more than "I'm getting OOM on a 24 GB 3090" or "the collaborator
pod restarts by OOM". Where no family explains the memory words, a sentence that reports an
OOM (not advice on avoiding one, not a guess, a condition or a feature request, not a question
without a report in it) is read with the lines around it: the card named (VRAM, CUDA, a GPU's
model, 显存) and nothing of the host's memory is the card's; the host's memory (RAM, swap, a
pod, a container) and nothing of the card's is the host's. Both or neither: still cannot tell.
Words, not a log line, so the answer is given at low confidence.

Bounded: only the first MAX_REPORTS lines that hold memory words are read, each with CONTEXT
lines either side, and the patterns are literals and bounded repeats.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpubot.knowledge.oom.localized import CJK_RISK
from gpubot.knowledge.oom.scan import OomClass

MAX_REPORTS = 20
MAX_TEMPLATE_LINES = 40  # where an issue template's headings are looked for
CONTEXT = 5
_SENTENCE_CHARS = 600

_I = re.IGNORECASE | re.ASCII

_SENTENCES = re.compile(
    r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f\uff0c])"
    # A report followed by its question: "48 GB VRAM OOM during inference - is this expected?",
    # "... finetune 2b OOM, what can I do to avoid OOM?"
    r"|(?:\s+[\u2014\u2013-]|,)\s+(?=(?:what|how|why|any|is|are|can|could|should|does|do)\b)",
    re.IGNORECASE,
)
# The word as people write it: OOM and its inflections (a library's "out of memory" line is a
# message no family knows, not a report); in Chinese, VRAM or memory short.
# Capitals as people write the word, not a field's or a flag's name ("cg-oom-killed:0").
_OOM = re.compile(r"(?<![\w-])OOM(?:s|ed|ing)?(?![\w-])", re.ASCII)
_OOM_CJK = re.compile("(?:\u663e\u5b58|\u986f\u5b58|\u5185\u5b58|\u5167\u5b58)\u4e0d\u8db3")
# Not a report: avoiding or preventing one, a guess, a condition, a setting or a request.
_NOT_A_REPORT = re.compile(
    r"\b(?:prevent\w{0,3}|avoid\w{0,3}|eliminat\w{0,4}|mitigat\w{0,4}|countermeasures?"
    r"|possibility|might|may|could|maybe|perhaps|probably|likely|guess\w{0,2}|suspect\w{0,2}"
    r"|if|whether|unless|in case|feature|opt-in|settings|options?|flags?|detect\w{0,3}|log"
    # A setting as a noun, not "when setting nproc_per_node=8, the RAM runs out (OOM)".
    r"|(?:the|a|an|this|that|its|OOM) setting"
    r"|logs|message|checks?|would|looks? like|seems?|shape of|instead of|rather than"
    r"|estimat\w{1,4}|not|no|never|nothing|none|without|should|\w{1,8}n't"
    r"|catch\w{0,3}|handl\w{1,3}|recover\w{0,3}|mechanisms?"
    # What to look out for after a change: "watch for any OOM over the next few days".
    r"|(?:watch|monitor|look out|check) for)\b"
    # An exit code's gloss ("52 (OOM)"), a table's row, a check that found none.
    r"|\b\d{1,3} ?\(OOM\)| \| |\u6ca1\u53d1\u751f|\u6c92\u767c\u751f|\u672a\u53d1\u751f"
    # In Chinese, a condition: "的话" and "如果" (if); a risk: 容易, 可能, 避免, 防止.
    r"|\u7684\u8bdd|\u5982\u679c|" + CJK_RISK,
    _I,
)
# A question is a report only when its speaker says it happened to them: "I'm getting OOM
# on a 6GB card - any solutions?", not "Are we getting OOM kills here?"
_REPORTED = re.compile(
    r"^\W{0,4}(?:I|I'm|Im|I am|we|we're|we are|my|our)\b[^?]{0,200}?\b(?:getting|get|gets|got"
    r"|geting|encounter\w{0,3}|hit|hitting|having|fails?|failed|error|errors|still)\b",
    _I,
)
_CARD = re.compile(
    r"\b(?:VRAM|GPUs?|GPU ?\d{3,4}\w{0,3}|CUDA|graphics cards?|video memory|KV[ -]?cache"
    r"|RTX ?\d{3,4}\w{0,3}|GTX ?\d{3,4}\w{0,3}"
    r"|[1-5]0[5-9]0(?: ?Ti)?|A100|A800|H100|H200|H800|H20|B200|A10G?|A30|A40|L20|L40S?|L4|T4"
    r"|V100|A6000"
    r"|MI\d{3}X?|[TN]PUs?|Megatron|TensorRT)\b|\u663e\u5b58|\u986f\u5b58|\u663e\u5361|\u986f\u5361",
    _I,
)
_HOST = re.compile(
    r"(?<!GPU )(?<!video )\bRAM\b|\b(?:system memory|host memory|CPU memory|swap\w{0,4}|pods?"
    r"|containers?|OOMKill\w{0,3}|OOM[- ]kill\w{0,3}|cgroups?|deployments?|VMs?"
    r"|droplets?|dynos?|laptops?|desktops?|Kubernetes|k8s|memory limits?)\b"
    r"|\u5185\u5b58|\u5167\u5b58",
    _I,
)


# A feature request's template: the OOM words in it describe a wish, not an event.
_FEATURE_REQUEST = re.compile(
    r"Is your feature request related to a problem|Describe the solution you'?d like", _I
)


# A proposal: a feature request's template or tag, an RFC, a change describing what it adds.
_PROPOSAL = re.compile(
    r"Is your feature request related to a problem|Describe the solution you'?d like"
    r"|The feature, motivation and pitch"
    r"|^\W{0,4}\[(?:Feature|Feature Request|RFC|Enhancement|Proposal)\]"
    r"|^\W{0,4}(?:Feature request|Proposal|RFC)\b"
    r"|^\W{0,4}This (?:PR|pull request|change|commit) (?:adds|introduces|implements|allows"
    r"|lets|enables)\b"
    r"|^#{1,4} ?(?:Desired use case or feature|Proposed solution|Feature description"
    r"|Describe the feature)\b",
    re.IGNORECASE | re.MULTILINE,
)
# Whoever wrote it speaking of their own runs: an experience, not only a proposal.
_OWN_RUNS = re.compile(
    r"\b(?:my|our) (?:system|machine|server|computer|PC|laptop|GPU|job|pod|cluster|node|run)s?\b"
    r"|\bI(?:'m| am)? (?:get|got|getting|hit|hitting|see|saw|seeing|ran|run|running into"
    r"|encounter\w{0,3}|experienc\w{1,3})\b",
    re.IGNORECASE,
)


def only_a_risk(lines: Sequence[str], memory_lines: Sequence[str]) -> bool:
    """Whether `lines` propose a change (a feature request, an RFC, a pull request) and name
    out-of-memory only as a risk: every line holding memory words hedges them (to avoid, to
    prevent, could, would) and no sentence reports one that happened."""
    head = lines[:MAX_TEMPLATE_LINES]
    if not memory_lines or not any(_PROPOSAL.search(line) for line in head):
        return False
    if any(_OWN_RUNS.search(line) for line in head):
        return False
    # The proposal's own tag ("[Feature]") is not the hedge of the words after it.
    read = [_PROPOSAL.sub("", line[: _SENTENCE_CHARS * 4]) for line in memory_lines[:MAX_REPORTS]]
    if not all(_NOT_A_REPORT.search(line) for line in read):
        return False
    # A fragment of a word or two ("to avoid. OOM") reports nothing on its own.
    return not any(
        _reports(s[:_SENTENCE_CHARS])
        for line in read
        for s in _SENTENCES.split(line)
        if len(s.split()) > 2
    )


def _reports(sentence: str) -> bool:
    if not (_OOM.search(sentence) or _OOM_CJK.search(sentence)):
        return False
    if _NOT_A_REPORT.search(sentence):
        return False
    return not sentence.rstrip().endswith(("?", "\uff1f")) or bool(_REPORTED.match(sentence))


def told_oom_device(
    lines: Sequence[str], memory_lines: Sequence[str]
) -> tuple[OomClass, tuple[str, ...]] | None:
    """Where an OOM told in `lines` happened (the card's or the host's memory), and the line
    that tells it; None when no sentence reports one or the lines around it name both places
    or neither. `memory_lines` are the lines holding memory words (the only ones read)."""
    if any(_FEATURE_REQUEST.search(line) for line in lines[:MAX_TEMPLATE_LINES]):
        return None
    wanted = set(memory_lines)
    anchors = [i for i, line in enumerate(lines) if line in wanted][:MAX_REPORTS]
    votes: set[OomClass] = set()
    told: list[str] = []
    for i in anchors:
        sentences = _SENTENCES.split(lines[i][: _SENTENCE_CHARS * 4])
        if not any(_reports(s[:_SENTENCE_CHARS]) for s in sentences):
            continue
        # The report's own line decides when it names one place; else the lines around it.
        vote = _place([lines[i]]) or _place(lines[max(0, i - CONTEXT) : i + CONTEXT + 1])
        if vote is None:
            continue
        votes.add(vote)
        told.append(lines[i])
    if len(votes) != 1:
        return None
    return votes.pop(), tuple(told)


def _place(lines: Sequence[str]) -> OomClass | None:
    """The card's memory or the host's, where `lines` name exactly one of the two."""
    card = any(_CARD.search(line) for line in lines)
    host = any(_HOST.search(line) for line in lines)
    if card == host:
        return None
    return "cuda_oom" if card else "host_oom_killed"
