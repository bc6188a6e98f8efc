"""What a quoted sentence commits to: a question, a "what if", a "considered ... but stayed", a refusal, or
a plain statement; and whether a later sentence takes something back.

These checks do not judge meaning (the agent and a second reader do); they catch the wording that must never
be promoted as "adopted": nobody adopts a question, and "we considered make but stayed on mise" adopts mise.
"""

from __future__ import annotations

import re

from memory_server.dream.claims import DONT_FORGET, mentions

QUESTION_START = re.compile(
    r"^\s*(?:what if|what about|how about|should we|shall we|could we|can we|would it|would we|do we|does it|"
    r"is it|is there|are there|why|maybe we|perhaps we|wonder(?:ing)? if|i wonder|want me to|shall i|should i)\b",
    re.I,
)
WHAT_IF = re.compile(
    r"\b(?:what if|suppose we|imagine we|hypothetically|in theory|if we were to|we could also|might be worth|"
    r"maybe|perhaps|possibly|might be|may be|could be|i wonder|i suspect|i guess|not sure|"
    r"asked (?:whether|if)|wondered (?:whether|if)|wants? to know (?:whether|if)|whether (?:we|they|i|you|he|she) "
    r"(?:can|could|should|may|might))\b",
    re.I,
)
CONSIDERED = re.compile(
    r"\b(?:considered|thought about|looked at|evaluated|tried|explored|discussed)\b.{0,160}?"
    r"\b(?:but|however)\b.{0,80}?\b(?:stay(?:ed|ing)?|kept|keep|stick(?:ing)?|stuck|remain(?:ed)?|decided against|"
    r"not|no|didn't|won't)\b",
    re.I | re.S,
)
# "We looked at make. We'll keep mise.": a look at something, then staying with what there was.
CONSIDERED_THEN_KEPT = re.compile(
    r"\b(?:considered|thought about|looked (?:at|into)|evaluated|tried|explored|discussed|weighed|compared)\b"
    r".{0,200}?(?:[.;:!]\s*|\s[—–]\s|,\s*(?:so|and|but)?\s*)"
    r".{0,40}?\b(?:(?:we'?ll|we will|we|let'?s|i'?ll|going to)\s+)?(?:keep(?:ing)?|stay(?:ing)?|stick(?:ing)?|"
    r"remain(?:ing)?|continu(?:e|ing)|sticking with|staying (?:on|with))\b",
    re.I | re.S,
)
# Saying no to doing something. ("You are not correct: ..." disagrees with what was said, and then says what
# is: a correction, read as one where the agent's words are the evidence.)
DECLINED = re.compile(
    r"\b(?:i would not|i wouldn't|let's not|lets not|we won't|we will not|don't do|do not do|"
    r"decided against|not worth it|don't set|do not set|not in this branch|let's leave it|leave it as it is|"
    r"not now|no thanks|no need|overkill)\b",
    re.I,
)
# A request worded as a question: "can you ...", "could we ...", "would you ...".
REQUEST = re.compile(
    r"(?:^\W*|[,;:—–-]\s*|\bso\s+|\band\s+)(?:(?:ok|okay|so|and|also|hmm|well|great|then|now)[,\s]+)*"
    r"(?:can|could|would|will) (?:you|we|u)\s+(?:please\s+)?(?!.*\bor\b.*\?)"
    r"(?!(?:maybe|perhaps|possibly|also consider|think|consider|imagine)\b)(?!.*\b(?:be related|be the cause|"
    r"be why|explain|tell me|check (?:whether|if)|look into whether)\b)",
    re.I,
)
SWITCHED = re.compile(r"\b(?:switched|moved|went with|replaced|now use)\b", re.I)
NO_START = re.compile(r"^\W*(?:no|nope|nah|don't|do not|dont)\b[,.!]?", re.I)
# After "no" or "but": what the person wants instead, which makes the sentence a correction or a switch.
INSTEAD = re.compile(
    r"\b(?:use|do|switch(?:ed)?|instead|go with|went with|keep|put|move(?:d)?|rename|replace(?:d)?|should|must|"
    r"let's|lets|now use)\b",
    re.I,
)
# Words that take something back, whatever it was: a sentence with one of them that names the subject
# reverses it. ("No longer", "removed", "drop it" take back only what they negate: see reversals.py.)
REVERSAL = re.compile(
    r"\b(?:revert(?:ed|ing|s)?|roll(?:ed)? (?:it |that |this )?back|rollback|undo|undid|undone|cancel(?:l?ed)?|"
    r"close it|closed it|switch(?:ed)? back|go back to|went back to|going back to|back out|backed out|"
    r"put (?:it |that |this |them |the )?(?:[\w`'.-]+ ){0,3}back\b|"
    r"scrap(?:ped)?|never ?mind|not needed after all|(?:is|are|was|were) actually needed|changed my mind|"
    r"ditch(?:ed|ing)?|unpin(?:ned|ning)?|forget (?:it|that|about it)|scratch that|restor(?:e|ed|ing)|"
    r"on second thought)\b",
    re.I,
)


SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def considered_part(text: str) -> str:
    """What a "we looked at X but kept Y" sentence only looked at (X's stretch), or ""."""
    m = CONSIDERED.search(text) or CONSIDERED_THEN_KEPT.search(text)
    return text[m.start() : m.end()] if m and not SWITCHED.search(text[m.end() :]) else ""


def kept_part(text: str) -> str:
    """What such a sentence kept: the words after its "keep", "stay on", "sticking with"."""
    m = CONSIDERED.search(text) or CONSIDERED_THEN_KEPT.search(text)
    if not m:
        return ""
    rest = text[m.end() : m.end() + 120]
    return re.split(r"[,;.!?]|\band\b|\bbecause\b", rest, maxsplit=1)[0]


def classify(quote: str) -> str:
    """ "question", "what-if", "considered", "declined" or "statement"."""
    text = DONT_FORGET.sub("remember to", quote.strip())  # "don't forget to bump it" asks for the bump
    considered = CONSIDERED.search(text) or CONSIDERED_THEN_KEPT.search(text)
    if considered and not SWITCHED.search(text[considered.end() :]):
        return "considered"  # not "we tried X but it did not work, so we switched to Y"
    if DECLINED.search(text):
        return "declined"
    no = NO_START.match(text)
    if no and not INSTEAD.search(text[no.end() :]):
        return "declined"  # a bare "no"; "no, use X" is a correction that adopts X
    if WHAT_IF.search(text):
        return "what-if"
    if REQUEST.search(text):
        return "statement"  # "can we rename it on main instead?": the person asking for it
    if text.endswith("?") or QUESTION_START.match(text):
        return "question"
    return "statement"


DECIDING = re.compile(
    r"^\W*(?:(?:ok|okay|so|and|then|yes|yeah)[,\s]+)*(?:let'?s|we(?:'ll| will| should| must)|please|use|do it|"
    r"go ahead|make|keep|go with|switch|add|remove)\b",
    re.I,
)


def _kind_of_run(run: str) -> str:
    """The kind of a quoted run of sentences: a question when one of them asks and none decides ("would YAML be
    easier? people keep getting TOML wrong" asks); else declined or considered when one of them is; else a
    statement."""
    kinds = [classify(s) for s in SENTENCE_BREAK.split(run) if s.strip()]
    if len(kinds) < 2:
        return classify(run)
    decides = any(DECIDING.match(s) for s in SENTENCE_BREAK.split(run))
    if any(k in ("question", "what-if") for k in kinds) and not decides:
        return "question"
    return next((k for k in kinds if k in ("declined", "considered")), "statement")


# Later in the same message: the person takes back what they just said ("Switch to pongo2. Actually no, forget
# pongo2"), before anyone acted on it.
SAME_MESSAGE_BACK = re.compile(
    r"\b(?:actually,? no|no,? wait|wait,? no|on second thought|scratch that|never ?mind|(?<!n't )(?<!not )"
    r"forget (?!to\b)\w+)\b",
    re.I,
)
# A condition the words hang on ("if the benchmark shows zstd wins, switch to zstd").
CONDITION = re.compile(r"^\W*(?:if|once|assuming|provided|unless)\b", re.I)
CONDITIONAL = re.compile(r"\b(?:if|once|assuming|provided|unless|when|after|until|later|first)\b", re.I)
# A yes that puts it off ("yes, after the release", "sure, but let me check the plan first").
DEFERRED = re.compile(
    r"^\W*(?:yes|yeah|yep|sure|ok|okay|fine|sounds good|maybe)\b\W*(?:but\b|after\b|once\b|later\b|when\b|"
    r"not (?:yet|now)\b|let me\b|wait\b|first\b|in a\b|next\b)",
    re.I,
)
# What the person believes, not what they found: support for a fact only with something that shows it.
BELIEF = re.compile(r"^\W*(?:i think|i believe|i feel|i'?d say|my guess|probably|likely|i suspect|i guess)\b", re.I)


def _rest_of(own: str, context: str) -> str:
    at = context.find(own)
    return context[at + len(own) :] if at >= 0 else ""


def _said_with(own: str, context: str, negative: bool, statement: str) -> str | None:
    """What the rest of the person's message (`context`: the sentence and all after it in the turn), or the
    sentence itself, does to an "adopted" reading."""
    if negative:
        return None
    back = SAME_MESSAGE_BACK.search(_rest_of(own, context))
    if back:
        return f"the same message takes it back ({back.group(0)!r}): {context[:200]!r}"
    if CONDITION.match(own) and not CONDITIONAL.search(statement):
        return f"the words hang on a condition the statement leaves out: {own[:200]!r}"
    if DEFERRED.match(own) and not CONDITIONAL.search(statement):
        return f"the answer puts it off: {own[:200]!r}; it was not adopted then"
    return None


def stance_problem(
    sentences: list[tuple[str, str]],
    negative: bool,
    decision: bool = True,
    statement: str = "",
    rests: list[str | None] | None = None,
) -> str | None:
    """Why quoted sentences cannot back an "adopted" statement, or None. Each is (its own sentence, that
    sentence with what follows it in its turn): the sentence says whether it asks or declines; what follows
    says whether it was only considered ("We looked at make. We'll keep mise."). A `negative` statement
    ("Do not ...") may rest on a refusal."""
    kinds = [(own, _kind_of_run(own), classify(context)) for own, context in sentences]
    for (own, _context), rest in zip(sentences, rests or [None] * len(sentences), strict=True):
        problem = _said_with(own, rest, negative, statement) if rest is not None else None
        if problem:
            return problem
    if not decision and kinds and all(BELIEF.match(own) or k in ("question", "what-if") for own, k, _l in kinds):
        return f"the evidence is what someone believes ({kinds[0][0][:200]!r}); cite what showed it"
    for own, _kind, later in kinds:
        if later == "considered" and not negative:
            return f'the evidence says it was considered but not taken up: {own[:200]!r}; use stance "rejected"'
    for own, kind, _later in kinds:
        if kind == "declined" and not negative and decision:  # a fact may quote a "no" to something else
            return f'the evidence declines it: {own[:200]!r}; it was not adopted (a "Do not ..." item can say so)'
    if kinds and all(k in ("question", "what-if") for _own, k, _l in kinds):
        shown = kinds[0][0][:200]
        return (
            f"the evidence only asks or supposes it ({shown!r}), which adopts nothing; cite the answer or the "
            'change that followed, or use stance "hypothetical"'
        )
    return None


# Words that keep something as it is: "stays at 50", "keep the fixtures in the repository", "leave them".
KEEPS = re.compile(
    r"\b(?:stays?|stayed|staying|keep|keeps|kept|keeping|remains?|remained|leave|leaves|unchanged|as (?:it )?is|"
    r"still|is right|are right|stick with|sticking with)\b",
    re.I,
)
PROPOSING = re.compile(r"\?\s*$|\b(?:i'?d suggest|i suggest|i propose|i recommend|i can|i could|want me to)\b", re.I)


def proposal_of(asked: str) -> str:
    """What an agent's text asks the person to agree to: its questions and proposals, else all of it."""
    parts = [p for p in SENTENCE_BREAK.split(asked) if PROPOSING.search(p.strip())]
    return " ".join(parts) if parts else asked


def no_keeps_it(statement: str, answer: str, asked: str, named: list[str]) -> bool:
    """Whether the person's "no" to the agent's proposal of a change supports a statement that keeps things as
    they are ("Want me to lower it?" - "no, 50 is right" for "`MAX_UPLOAD_MB` stays at 50"): the statement keeps,
    the proposal does not, and what the statement keeps (`named`: its terms it does not negate) is not what the
    proposal would bring in ("Switch to zstd?" - "no" never supports "The archive stays on zstd")."""
    if not asked or not NO_START.match(answer) or not KEEPS.search(statement):
        return False
    proposal = proposal_of(asked)
    if KEEPS.search(proposal):
        return False  # "no" to "should I keep it?" does not keep it
    return not mentions(proposal, named, 1)
