"""Generated continuations for the repetition detector: greedy and beam loops against nucleus
samples and human-like text, with known answers.

A small open model decoded greedily or with beam search falls into loops of every size: one
word again and again ("Diarrhea" 31 times), a sentence or a paragraph, a list item with a
counter, copies that drift a word or two, and long sentences written twice before the token
limit cuts the second copy (~200 tokens, as a continuation benchmark does). Nucleus samples and
people repeat too, but differently: a phrase now and then, list items of one template, tables
and listings full of numbers, code. Every generator is seeded: the same seed gives the same text.
"""

from __future__ import annotations

import random

_SUBJECTS = [
    "the patient", "my neighbour", "the committee", "our team", "the city council", "a small bakery",
    "the old bridge", "the new model", "this approach", "the first draft", "the local school",
    "the river", "the company", "the author", "every visitor", "the engine", "the report",
    "the market", "her brother", "the museum", "the storm", "the contract", "the garden",
]
_VERBS = [
    "opened", "explained", "changed", "delayed", "improved", "described", "ignored", "reduced",
    "announced", "questioned", "replaced", "visited", "measured", "supported", "rejected",
    "finished", "started", "covered", "followed", "raised", "noticed", "shared", "tested",
]
_OBJECTS = [
    "the budget", "a long letter", "the results", "the morning schedule", "two new roads",
    "the main entrance", "an unusual plan", "the water supply", "its opening hours", "the prices",
    "the final chapter", "a quiet protest", "the evening news", "several old photos", "the rules",
    "a better offer", "the annual festival", "the whole process", "a short film", "the records",
]
_TAILS = [
    "last week", "after the meeting", "without much warning", "for the third time", "in the spring",
    "before anyone noticed", "despite the rain", "with some help", "as expected", "on Tuesday",
    "at the end of the day", "for a few hours", "in front of the press", "again and again", "",
]
_OPENERS = ["", "", "", "However, ", "Later, ", "Meanwhile, ", "In the end, ", "Surprisingly, ",
            "According to the report, ", "As a result, ", "Still, ", "At first, "]
_SHORT_LOOPS = ["Diarrhea", "Advertisement", "the", "Loading...", "No.", "Yes, yes.", "OK",
                "[citation needed]", "Thank you!", "Click here", "* * *", "Read more", "Menu"]
_SYNONYMS = {"opened": "started", "explained": "described", "changed": "altered", "improved": "fixed",
             "the": "a", "last week": "recently", "new": "fresh", "old": "former", "again": "once more",
             "results": "findings", "budget": "costs", "report": "study", "plan": "idea"}
_MAKES = [("Toyota", "Camry"), ("Honda", "Civic"), ("Ford", "Focus"), ("Mazda", "CX-5"),
          ("BMW", "320i"), ("Kia", "Rio"), ("Audi", "A4"), ("Tesla", "Model 3"), ("Volvo", "XC60")]
_CITIES = ["Dallas", "Leeds", "Lyon", "Austin", "Porto", "Graz", "Denver", "Malmo", "Cork"]


def sentence(rng: random.Random) -> str:
    tail = rng.choice(_TAILS)
    body = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{' ' + tail if tail else ''}"
    opener = rng.choice(_OPENERS)
    text = opener + (body if opener else body[0].upper() + body[1:])
    if rng.random() < 0.25:
        text += f", and {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
    return text + rng.choice([".", ".", ".", "!", "?"])


def prose(rng: random.Random, sentences: int) -> str:
    out, line = [], []
    for _ in range(sentences):
        line.append(sentence(rng))
        if rng.random() < 0.2:
            out.append(" ".join(line))
            line = []
    out.append(" ".join(line))
    return "\n\n".join(p for p in out if p)


def _tokens_cut(text: str, budget: int, rng: random.Random) -> str:
    """``text`` cut after about ``budget`` words, sometimes in the middle of a word."""
    words = text.split(" ")
    cut = " ".join(words[:budget])
    if rng.random() < 0.3 and len(words) > budget:
        cut += " " + words[budget][: rng.randint(1, max(1, len(words[budget]) - 1))]
    return cut


def _drift(unit: str, rng: random.Random, rate: float) -> str:
    words = unit.split(" ")
    for i, word in enumerate(words):
        if rng.random() < rate and word.lower() in _SYNONYMS:
            words[i] = _SYNONYMS[word.lower()]
        elif rng.random() < rate / 3:
            words[i] = rng.choice(_VERBS)
    return " ".join(words)


# -- loops (positives) -------------------------------------------------------------------------


def loop_exact(rng: random.Random) -> str:
    unit = " ".join(sentence(rng) for _ in range(rng.choice([1, 1, 2, 3]))) + " "
    return _tokens_cut(prose(rng, rng.randint(0, 4)) + " " + unit * 40, rng.randint(120, 220), rng)


def loop_short(rng: random.Random) -> str:
    word = rng.choice(_SHORT_LOOPS)
    sep = rng.choice(["\n", " ", "\n\n"])
    return prose(rng, rng.randint(0, 3)) + "\n" + sep.join([word] * rng.randint(12, 40))


def loop_twice(rng: random.Random) -> str:
    """A long passage written twice; the token limit cuts the second copy."""
    unit = " ".join(sentence(rng) for _ in range(rng.randint(4, 7))) + " "
    lead = prose(rng, rng.randint(0, 3))
    budget = len(lead.split(" ")) + int(len(unit.split(" ")) * rng.uniform(1.1, 1.9))
    return _tokens_cut(lead + " " + unit * 3, budget, rng)


def loop_drifting(rng: random.Random) -> str:
    unit = " ".join(sentence(rng) for _ in range(rng.choice([1, 2]))) + " "
    copies = [_drift(unit, rng, 0.12) for _ in range(30)]
    return _tokens_cut(prose(rng, rng.randint(0, 3)) + " " + "".join(copies), rng.randint(140, 220), rng)


def loop_list(rng: random.Random) -> str:
    item = sentence(rng)
    start = rng.randint(1, 5)
    lines = [f"{i}. {_drift(item, rng, 0.05)}" for i in range(start, start + 30)]
    return _tokens_cut(prose(rng, rng.randint(0, 2)) + "\n" + "\n".join(lines), rng.randint(120, 220), rng)


GREEDY = {loop_exact: 4, loop_short: 2, loop_drifting: 2, loop_list: 2, loop_twice: 1}
BEAM = {loop_exact: 3, loop_twice: 4, loop_drifting: 2, loop_list: 1}


# -- ordinary text (negatives) ------------------------------------------------------------------


def nucleus(rng: random.Random) -> str:
    """Prose that now and then reuses a phrase of its own, as sampled text does."""
    parts = prose(rng, rng.randint(6, 14)).split(" ")
    for _ in range(rng.randint(0, 3)):
        if len(parts) > 20:
            at = rng.randint(0, len(parts) - 8)
            phrase = parts[at : at + rng.randint(3, 6)]
            where = rng.randint(0, len(parts))
            parts[where:where] = phrase
    return _tokens_cut(" ".join(parts), 200, rng)


def human_list(rng: random.Random) -> str:
    lead = sentence(rng)
    items = [f"- **{rng.choice(_SUBJECTS).title()}**: {sentence(rng)}" for _ in range(rng.randint(4, 9))]
    return lead + "\n\n" + "\n".join(items)


def car_listings(rng: random.Random) -> str:
    rows = []
    for _ in range(rng.randint(6, 14)):
        make, model = rng.choice(_MAKES)
        rows.append(f"{rng.randint(2008, 2023)} {make} {model}, {rng.randint(5, 180) * 1000:,} miles, "
                    f"${rng.randint(40, 450) * 100:,}, {rng.choice(_CITIES)}")
    return "Here are the listings near you:\n\n" + "\n".join(rows)


def stat_table(rng: random.Random) -> str:
    head = "| Player | Games | Points | Rebounds | Assists |\n|---|---:|---:|---:|---:|\n"
    rows = [f"| {rng.choice(_SUBJECTS).title()} | {rng.randint(10, 82)} | {rng.uniform(2, 31):.1f} | "
            f"{rng.uniform(1, 13):.1f} | {rng.uniform(0, 11):.1f} |" for _ in range(rng.randint(5, 15))]
    return sentence(rng) + "\n\n" + head + "\n".join(rows)


def number_list(rng: random.Random) -> str:
    return "Results by week:\n" + "\n".join(
        f"Week {i}: {rng.randint(1, 40)} km, {rng.randint(20, 300)} minutes, {rng.randint(120, 190)} bpm"
        for i in range(1, rng.randint(8, 20))
    )


def code(rng: random.Random) -> str:
    names = rng.sample(["load", "save", "parse", "check", "fetch", "merge", "split", "render"], 4)
    body = "\n\n".join(
        f"def {name}(path, retries=3):\n    for attempt in range(retries):\n        try:\n"
        f"            return _{name}(path)\n        except OSError:\n            time.sleep(2 ** attempt)\n"
        f"    raise RuntimeError(path)"
        for name in names
    )
    return sentence(rng) + "\n\n```python\n" + body + "\n```\n\n" + sentence(rng)


def faq(rng: random.Random) -> str:
    """Questions and answers of one template, as help pages write them."""
    places = ["Settings", "Profile", "Billing", "Security", "Account", "Privacy", "Team", "Data"]
    verbs = ["reset", "change", "delete", "export", "update", "share", "download", "restore"]
    entries = []
    for noun in rng.sample([o.split()[-1] for o in _OBJECTS], rng.randint(3, 7)):
        place = rng.choice(places)
        entries.append(f"Q: How do I {rng.choice(verbs)} {noun}?\nA: Open {place}, choose "
                       f"{rng.choice(places)}, and click \"{rng.choice(verbs).title()}\". {sentence(rng)}")
    return "\n\n".join(entries)


def steps(rng: random.Random) -> str:
    """Numbered instructions that start alike."""
    return sentence(rng) + "\n\n" + "\n".join(
        f"{i}. Open the {rng.choice(_OBJECTS).split()[-1]} page and {rng.choice(['click', 'select', 'check'])} "
        f"{rng.choice(_OBJECTS)}." for i in range(1, rng.randint(4, 10))
    )


NUCLEUS = {nucleus: 1}
def human_prose(rng: random.Random) -> str:
    return prose(rng, rng.randint(3, 14))


HUMAN = {human_prose: 4, human_list: 2, faq: 1, steps: 1, car_listings: 1, stat_table: 1, number_list: 1,
         code: 1}


def sample(kinds: dict, n: int, seed: int) -> list[str]:
    """``n`` texts drawn from ``kinds`` (generator: weight), reproducibly."""
    rng = random.Random(seed)
    generators, weights = list(kinds), list(kinds.values())
    return [rng.choices(generators, weights)[0](rng) for _ in range(n)]


def corpora(n: int = 1000, seed: int = 0) -> dict[str, list[str]]:
    """The four corpora of the benchmark: two of loops, two of ordinary text."""
    return {
        "greedy": sample(GREEDY, n, seed),
        "beam": sample(BEAM, n, seed + 1),
        "nucleus": sample(NUCLEUS, n, seed + 2),
        "human": sample(HUMAN, n, seed + 3),
    }


def raw_repeat_score(text: str, tail_chars: int = 2400) -> float:
    """The repeat score's raw value for ``text`` as the detector computes it (0 when too short)."""
    from infersight.detectors._repetition import _prose_tail, _tokens, repeat_score

    score = repeat_score(_tokens(_prose_tail(text, tail_chars)))
    return 0.0 if score is None else score


def calibration(corpora: list[list[str]], steps: int = 100) -> list[tuple[float, float]]:
    """(raw score, the largest share of any of ``corpora`` scoring at least that much) on a grid
    of raw scores, up to the first at which no text scores that much."""
    scores = [sorted(raw_repeat_score(t) for t in texts) for texts in corpora]
    out = []
    for k in range(steps + 1):
        threshold = k / steps
        share = max(sum(1 for s in mine if s >= threshold) / len(mine) for mine in scores)
        out.append((threshold, share))
        if share == 0:
            break
    return out


CALIBRATION_SEEDS = (100, 101)
"""Seeds of the calibration corpora (2,000 nucleus-style, 2,000 human-like answers): not the
seeds the benchmark measures on."""


def calibration_corpora(n: int = 2000) -> list[list[str]]:
    return [sample(NUCLEUS, n, CALIBRATION_SEEDS[0]), sample(HUMAN, n, CALIBRATION_SEEDS[1])]
