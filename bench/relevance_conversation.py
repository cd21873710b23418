"""bench.relevance's conversational-memory categories (issue 34): long multi-session chats
between two named people, asked about later, as a conversational-memory benchmark asks.

Each conversation is a workspace of its own: ``SESSIONS`` dated sessions (a few weeks
apart, in 2025), each a dozen turns that alternate between the two people (``message/user``
for the first, ``message/assistant`` for the second; every turn starts with its speaker's
name). Most turns are small talk from a shared bank that reuses the facts' everyday words
(a birthday, a trip, the garden, work), so the facts' words recur all over the
conversation, and each person's name is in every one of their turns. Planted turns hold
the facts asked about; a question's words are spread over the answer turn and its
neighbours, so mostly no single turn holds all of them (a partial match, as real
questions are).

- ``conv_single``: a question whose answer is one turn; the expected session holds it.
- ``conv_wrong_person``: the same facts asked about the other person ("Where did Jon have
  his daughter's party?" when Maya said it): the session holding the fact is still the
  one to show, not a turn that only names the person.
- ``conv_dated``: one topic in two sessions of different months, asked "in March 2025":
  only the date tells the sessions apart (the session's events carry the date).
- ``conv_meaning``: the facts asked in other words ("What pet did Maya bring home?" for a
  rescue greyhound): only the name is a word in common, so meaning has to find them.

Issue 42 makes them hard the way a public conversational-memory benchmark's adversarial
questions are (there hybrid ranked 7 points below lexical on questions about something
another person said, or that was never said):

- ``conv_other_speaker``: a question about something the other person said: the event's
  words are in one person's turn ("We booked the cabin by the lake for the family
  reunion"), the question names the other ("Which relatives did Jon invite to the reunion
  cabin?"), who said something alike in meaning in another session ("My relatives are
  all coming to stay for a big get-together"). The event's session is the one to show;
  the question asks with words nobody said, so every hit is a weak partial match, and a
  model reading meaning puts the asked person's turn first (the bundled model does on
  most of them).
- ``conv_near_name``: the same with a near-miss name: the event is told of the asked
  person's namesake ("my cousin Maia ran the city marathon"), the question names the asked
  person ("What medal did Maya receive for the city marathon?"), who told something alike
  elsewhere.
- ``conv_absent``: a question whose answer was never said: every content word of it is
  in the conversation, never in one turn ("What did Maya name the pottery class?").
  Scored right when the reply says it holds no confident answer: the page is marked
  partial (no event holds every content word of the question, the line the store's reply
  draws for the model), whatever it lists below that line. The label's session is empty.
  Only the store's engines report that mark; the baseline and reference rankers score 0.

Everything is written for the bench; nothing comes from a transcript or another corpus.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from bench.relevance_corpus import Session

CATEGORIES: Final = (
    "conv_single",
    "conv_wrong_person",
    "conv_dated",
    "conv_meaning",
    "conv_other_speaker",
    "conv_near_name",
    "conv_absent",
)
# A question whose answer was never said: its label's session (``ABSENT_SESSION``) is none.
ABSENT: Final = "conv_absent"
ABSENT_SESSION: Final = ""
# Categories whose questions hold words no turn says (as the real benchmark's do): exempt
# from the check that every word of a label is in its session; the lexical targets apply.
UNSAID_WORDS: Final = frozenset({"conv_other_speaker", "conv_near_name"})
# Questions in words the conversation does not use: lexical search finds them by the name
# at most (exempt, like the paraphrases, from "every query word is in the session").
IN_OTHER_WORDS: Final = "conv_meaning"
SESSIONS: Final = 10
TURNS: Final = 12  # per session, planted turns included
PEOPLE: Final = (("Maya", "Jon"), ("Priya", "Tomas"), ("Lena", "Marco"))
_FIRST_DAY: Final = datetime(2025, 1, 6, 18, tzinfo=UTC)
_DAYS_APART: Final = 17


@dataclass(frozen=True, slots=True)
class Fact:
    """A planted exchange: ``turns`` as (speaker 0 or 1, text with ``{a}`` and ``{b}``
    for the two names); the question asked about it (``{a}`` names who said it), the
    same question about the wrong person (``{b}``) when it has one, and the question in
    other words."""

    turns: tuple[tuple[int, str], ...]
    question: str
    wrong_person: str | None
    in_other_words: str  # the question in words the turns do not use (meaning alone)


FACTS: Final = (
    Fact(
        (
            (
                0,
                "{a}: My daughter turned seven on Saturday and we had the party at the "
                "aquarium, she would not leave the shark tunnel.",
            ),
            (1, "{b}: Seven already! Did she like her birthday cake?"),
        ),
        "Where was the birthday party for the daughter of {a}?",
        "Where was the birthday party for the daughter of {b}?",
        "How did {a}'s little girl celebrate getting a year older?",
    ),
    Fact(
        (
            (
                1,
                "{b}: I finally signed up for the pottery class at the community center, "
                "Tuesday evenings for eight weeks.",
            ),
            (0, "{a}: You will be making mugs for everyone by spring."),
        ),
        "Which class did {a} sign up for at the community center?",
        None,
        "What craft is {a} learning on weeknights?",
    ),
    Fact(
        (
            (
                0,
                "{a}: We brought home a rescue greyhound from the shelter, we named him "
                "Biscuit and he sleeps on the sofa all day.",
            ),
            (1, "{b}: A greyhound! How is the new dog settling in?"),
        ),
        "What did {a} name the rescue dog?",
        "What did {b} name the rescue dog?",
        "What pet did {a} bring home recently?",
    ),
    Fact(
        (
            (
                1,
                "{b}: My brother is moving to Lisbon in the autumn for a job at a "
                "shipping company.",
            ),
            (0, "{a}: Lisbon is lovely, you will have somewhere to stay on holiday."),
        ),
        "Where is the brother of {a} moving for a job?",
        "Where is the brother of {b} moving for a job?",
        "Which city is {a}'s sibling relocating to?",
    ),
    Fact(
        (
            (
                0,
                "{a}: I ran my first half marathon on Sunday, two hours and four minutes, "
                "my knees are still complaining.",
            ),
            (1, "{b}: Two hours is a great time for a first race."),
        ),
        "What was the time of {a} in the first half marathon?",
        "What was the time of {b} in the first half marathon?",
        "How fast did {a} finish the long-distance run?",
    ),
    Fact(
        (
            (
                1,
                "{b}: The book club picked a novel about a lighthouse keeper on a Scottish "
                "island, I could not put it down.",
            ),
            (0, "{a}: Send me the title, I need something for the train."),
        ),
        "What was the book club novel of {a} about?",
        None,
        "What story was {a}'s reading group discussing?",
    ),
    Fact(
        (
            (
                0,
                "{a}: We painted the kitchen a dark green over the weekend, the old "
                "yellow walls are finally gone.",
            ),
            (1, "{b}: Dark green is a cosy colour, send a picture."),
        ),
        "What colour did {a} paint the kitchen?",
        "What colour did {b} paint the kitchen?",
        "Which room did {a} redecorate?",
    ),
    Fact(
        (
            (
                1,
                "{b}: My grandmother is teaching me her plum dumpling recipe, the dough has "
                "mashed potato in it.",
            ),
            (0, "{a}: Potato in the dough? I would love that recipe."),
        ),
        "Which recipe did the grandmother of {a} teach?",
        "Which recipe did the grandmother of {b} teach?",
        "What dish is {a} learning to cook from an older relative?",
    ),
)

# (the topic's turn in an earlier month, the same topic later, the question; ``{month}``
# is the later session's month and year)
DATED: Final = (
    (
        "{a}: We went hiking in the mountains near Granada, the trail was covered in snow.",
        "{a}: Another hiking trip this weekend, this time along the cliffs near Porto.",
        "Where did {a} hike in {month}?",
    ),
    (
        "{a}: The garden is finally planted, tomatoes and beans along the fence.",
        "{a}: The garden is full of slugs, they ate every lettuce along the fence.",
        "How was the garden of {a} in {month}?",
    ),
    (
        "{a}: The concert in the old theatre was wonderful, the choir sang for two hours.",
        "{a}: The concert in the park got rained out, the band played one song.",
        "How was the concert of {a} in {month}?",
    ),
)

# Something another person said (issue 42): (the event in one person's turn, the asked
# person's own turn in another session holding the question's other words and meaning
# much the same, the question about the asked person in the event's words and words
# nobody said). The event's session is the one to show: the asked person never told it.
# Speaker 0 tells the event, speaker 1 is asked.
OTHER_SPEAKER: Final = (
    (
        "{a}: We finally booked the cabin by the lake for the family reunion.",
        "{b}: My relatives are all coming to stay with us for a big get-together this summer.",
        "Which relatives did {b} invite to the reunion cabin?",
    ),
    (
        "{a}: My son scored the winning goal in the football final on Saturday.",
        "{b}: My boy plays every weekend, his grandfather never misses a single game.",
        "Did the son of {b} dedicate the winning goal to his grandfather?",
    ),
    (
        "{a}: I got the promotion at the bank, I start as branch manager next month.",
        "{b}: I asked my boss for a raise and more responsibility, fingers crossed.",
        "How big a raise did {b} negotiate with the branch manager promotion?",
    ),
    (
        "{a}: Our flight to Iceland was cancelled, we spent the night at the airport hotel.",
        "{b}: The airline finally refunded my tickets after three months of emails.",
        "Which airline refunded {b} for the cancelled Iceland flight?",
    ),
)
# Near-miss names (issue 42): the namesake of each person.
NEAR_NAMES: Final = {
    "Maya": "Maia",
    "Jon": "John",
    "Priya": "Pria",
    "Tomas": "Thomas",
    "Lena": "Lina",
    "Marco": "Marko",
}
# Something a namesake did (issue 42): (the event, told by speaker 0 of {n}, the namesake
# of speaker 1; speaker 1's own turn in another session with the question's other words;
# the question about speaker 1 in the event's words). The telling's session is the one
# to show.
NEAR_NAME: Final = (
    (
        "{a}: My cousin {n} ran the city marathon, she finished in four hours.",
        "{b}: I got a medal for finishing the charity fun run, my first race ever.",
        "What medal did {b} receive for the city marathon?",
    ),
    (
        "{a}: {n} from my old team opened a bakery on the corner, the sourdough sells out.",
        "{b}: I baked croissants and cinnamon rolls for the school fair, they sold in an hour.",
        "Which pastries did {b} sell first at the corner bakery?",
    ),
)
# Questions never answered (issue 42): each content word is in the conversation (the
# facts are planted in every one), never all in one turn.
ABSENT_QUESTIONS: Final = (
    "What did {a} name the pottery class?",
    "Which shark did {b} bring to the book club?",
    "When did {a} paint the greyhound?",
    "Which recipe did {b} learn at the aquarium?",
)

# Small talk; ``{a}`` and ``{b}`` as in ``Fact``. Speaker 0 or 1 by position.
SMALL_TALK: Final = (
    "Work has been busy, the quarterly report is due on Friday.",
    "The party at the office on Friday was too loud for me.",
    "My nephew's birthday is next month and I still have no present.",
    "We had pasta again, nobody wanted to cook after the long day.",
    "The weather finally turned, I sat in the garden with a coffee.",
    "Did you watch the match last night? What a finish.",
    "I need a holiday, maybe a short trip somewhere warm.",
    "The kids have a school play next week, I am sewing costumes.",
    "My neighbour's dog barked the whole night again.",
    "I started reading a new book, a slow one about a family farm.",
    "The train was late three times this week.",
    "We are thinking of moving somewhere with a bigger kitchen.",
    "My sister called, she says hello and wants to meet for lunch.",
    "I tried a new recipe for bread and it came out flat.",
    "The gym was packed this morning, I gave up and went running instead.",
    "How was your weekend? Mine went by in a blur of errands.",
    "We finally fixed the leaking tap in the bathroom.",
    "I found an old photo album from our first holiday together.",
    "The class schedule changed again, I have to rearrange everything.",
    "Thanks for listening the other day, it helped a lot.",
)
_DATE_WORDS: Final = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|\d{4})\b"
)


@dataclass(frozen=True, slots=True)
class Label:
    category: str
    query: str
    session_id: str


def without_dates(query: str) -> str:
    """The query without its month names and years (not words any turn holds: a dated
    question's date is the session's time)."""
    return _DATE_WORDS.sub(" ", query)


def build(
    seed: int, conversation: int, cwd: str, new_session: Callable[[str, int], Session]
) -> list[Label]:
    """One conversation's sessions (made by ``new_session(sid, start_ms)`` in ``cwd``'s
    workspace) and its labels."""
    rng = random.Random(f"{seed}:conversation:{conversation}")
    a, b = PEOPLE[conversation % len(PEOPLE)]
    names = {"a": a, "b": b}
    facts = list(FACTS)
    rng.shuffle(facts)
    # Sessions 1.. hold the facts (two per session at most); the dated pairs take an early
    # and a late session, the later one the question's month.
    plan: dict[int, list[tuple[int, str]]] = {i: [] for i in range(SESSIONS)}
    fact_session: list[int] = []
    for i, fact in enumerate(facts):
        s = 1 + (i * 7) % (SESSIONS - 1)
        plan[s].extend(fact.turns)
        fact_session.append(s)
    dated_sessions = []
    for j, (early, late, _) in enumerate(DATED):
        first, second = 1 + j, SESSIONS - 3 + j
        plan[first].append((0, early))
        plan[second].append((0, late))
        dated_sessions.append(second)
    # Issue 42's: the event early, the asked person's turn alike in meaning late; the
    # namesake's event and the asked person's turn alike in two more sessions.
    other_sessions = []
    for j, (event, alike, _) in enumerate(OTHER_SPEAKER):
        first, second = (2 + 2 * j) % SESSIONS, (7 + 2 * j) % SESSIONS
        plan[first].append((0, event))
        plan[second].append((1, alike))
        other_sessions.append(first)
    near_sessions = []
    for j, (event, alike, _) in enumerate(NEAR_NAME):
        first, second = (3 + 4 * j) % SESSIONS, (6 + 4 * j) % SESSIONS
        plan[first].append((0, event.replace("{n}", NEAR_NAMES[b])))
        plan[second].append((1, alike))
        near_sessions.append(first)
    ids = []
    for s in range(SESSIONS):
        sid = f"r{seed}-conv{conversation}-s{s:02d}"
        ids.append(sid)
        session = new_session(sid, int(_day_of(s).timestamp() * 1000))
        planted = plan[s]
        at = rng.randrange(0, TURNS - len(planted) + 1)
        talk = rng.sample(SMALL_TALK, TURNS - len(planted))
        turns = talk[:at] + [None] * len(planted) + talk[at:]
        for k, text in enumerate(turns):
            if text is None:
                speaker, line = planted[k - at]
                _say(session, speaker, line.format(**names))
            else:
                speaker = k % 2
                _say(session, speaker, f"{names['ab'[speaker]]}: {text}")
        session.end()
    labels = []
    for fact, s in zip(facts, fact_session, strict=True):
        said_by = fact.turns[0][0]
        who = {"a": names["ab"[said_by]], "b": names["ab"[1 - said_by]]}
        labels.append(Label("conv_single", fact.question.format(**who), ids[s]))
        if fact.wrong_person is not None:
            labels.append(Label("conv_wrong_person", fact.wrong_person.format(**who), ids[s]))
        labels.append(Label(IN_OTHER_WORDS, fact.in_other_words.format(**who), ids[s]))
    for (_, _, question), s in zip(DATED, dated_sessions, strict=True):
        month = _day_of(s).strftime("%B %Y")
        labels.append(Label("conv_dated", question.format(a=a, month=month), ids[s]))
    for (_, _, question), s in zip(OTHER_SPEAKER, other_sessions, strict=True):
        labels.append(Label("conv_other_speaker", question.format(**names), ids[s]))
    for (_, _, question), s in zip(NEAR_NAME, near_sessions, strict=True):
        labels.append(Label("conv_near_name", question.format(**names), ids[s]))
    for question in ABSENT_QUESTIONS:
        labels.append(Label(ABSENT, question.format(**names), ABSENT_SESSION))
    return labels


def _day_of(session: int) -> datetime:
    return _FIRST_DAY + timedelta(days=session * _DAYS_APART)


def _say(session: Session, speaker: int, text: str) -> None:
    if speaker == 0:
        session.user(text)
    else:
        session.assistant(text)
