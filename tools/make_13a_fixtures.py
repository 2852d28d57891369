#!/usr/bin/python3
"""Writes the fixture that tests/test_metrics.c checks ts_tokenize_13a and
ts_bleu_score_sacrebleu against.

sacreBLEU is not packaged for Debian 12 (nor installable on this project's
machines), so this script restates, in plain Python, what sacreBLEU 2.x's
BLEU() does with its defaults (tokenize '13a', smooth_method 'exp', no
lowercasing, one reference per segment). The 13a rules are Python regular
expressions here, applied with re.sub as sacreBLEU applies them; the C code
scans bytes by hand, so the two are independent readings of one definition:

    segment = segment.rstrip()
    remove "<skipped>", then "-\\n"; "\\n" -> " "; &quot; &amp; &lt; &gt; decoded
    segment = " " + segment + " "
    ([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/])  -> " \\1 "
    ([^0-9])([\\.,])                     -> "\\1 \\2 "
    ([\\.,])([^0-9])                     -> " \\1 \\2"
    ([0-9])(-)                           -> "\\1 \\2 "
    tokens = segment.split()

BLEU: clipped n-gram matches and hypothesis n-grams (n = 1..4) summed over
the corpus, then compute_bleu: 0 without any match; an order with no
n-gram gives 0; the k-th order without a match counts 100 / (2^k total);
score = BP * exp(mean log precision), BP = exp(1 - r/c) when c < r.
The fixture stores the fraction (sacreBLEU prints 100 times it).

The published sacreBLEU examples the test also checks are in
tests/test_metrics.c itself (they are few and short).

Run by hand; neither the build nor the tests run it, its output is committed:

    /usr/bin/python3 tools/make_13a_fixtures.py tests/fixtures

Format (texts escape backslash, newline, tab and carriage return as \\\\ \\n \\t \\r):

    TOK <text>                one segment
    GOT <tokens>              its 13a tokens joined by single spaces
    CASE <name>               a corpus:
    H <hypothesis text>       its segments, as written (not tokenized)
    R <reference text>
    ...
    BLEU <value %.17g>
"""
import math
import random
import re
import sys
from collections import Counter

ORDER = 4

RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(segment):
    line = segment.rstrip()
    for old, new in (("<skipped>", ""), ("-\n", ""), ("\n", " "), ("&quot;", '"'),
                     ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        line = line.replace(old, new)
    line = " " + line + " "
    for pattern, repl in RULES:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def stats(hyp, ref):
    h, r = hyp.split(), ref.split()
    out = []
    for n in range(1, ORDER + 1):
        hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
        rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
        out.append((sum((hc & rc).values()), sum(hc.values())))
    return out, len(h), len(r)


def bleu(pairs):
    correct, total = [0] * ORDER, [0] * ORDER
    sys_len = ref_len = 0
    for hyp, ref in pairs:
        s, lh, lr = stats(tokenize_13a(hyp), tokenize_13a(ref))
        for k, (c, t) in enumerate(s):
            correct[k] += c
            total[k] += t
        sys_len += lh
        ref_len += lr
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    if not any(correct):
        return 0.0
    smooth, logs = 1.0, 0.0
    for c, t in zip(correct, total):
        if t == 0:
            return 0.0
        if c == 0:
            smooth *= 2
            p = 100.0 / (smooth * t)
        else:
            p = 100.0 * c / t
        logs += math.log(p)
    return bp * math.exp(logs / ORDER) / 100.0


def escape(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


SEGMENTS = [
    "", "   ", "Hello, world!", "I want to go home.", "Je veux rentrer à la maison.",
    "It wasn't surprising.", "The man had just bitten him.", "3.14, 2,5 and 1-2-3 or a-b",
    "1.000.000 1,5. .5 5. ,a a, x.y", "Dr. Smith's (e-mail: a@b.c) costs $5/month; ok?",
    "Attends\u202f! Qu'est-ce que c'est\u00a0?", "« Bonjour », dit-il… l'été.",
    "&quot;quoted&quot; &amp;lt; &amp; &lt;b&gt;", "<skipped> a<skipped>b <skip<skipped>ped>",
    "line one-\nline two\nthree", "a..b,,c.,d,.e", "9.a a.9 .9. -9- 9-9 --", "tab\tand\u3000ideographic space",
    "{[(x)]} ~`^_|\\ #%*+=<>", "ends with spaces and newline  \n", "trailing\u00a0nbsp\u00a0",
    "\u4e2d\u6587\u3002\u4e2d,\u6587.", "é.é,è.1", "\U0001F600.\U0001F600,x",
]


def random_segment(rng):
    pieces = list("abcXYZ019 .,-'/;:!?()&\"<>@#") + ["\u00e9", "\u00a0", "\u202f", "\u4e2d", "\U0001F600",
                                                     "\n", "\t", "&amp;", "&lt;", "&quot;", "<skipped>", "-\n"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))


def words(rng, vocab):
    return " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12)))


def corpus_cases(rng):
    cases = [
        ("identical", [("I want to go home.", "I want to go home.")]),
        ("punctuation_attached", [("Je veux rentrer.", "Je veux rentrer à la maison."),
                                  ("Qu'est-ce que c'est ?", "Qu'est-ce que c'est\u00a0?")]),
        ("case_kept", [("je veux rentrer.", "Je veux rentrer.")]),
        ("no_match", [("abc", "xyz")]),
        ("empty_hypotheses", [("", "a b c"), ("", "d e f")]),
        ("one_order_without_match", [("a b x c d y e", "a b c d e f g h")]),
        ("two_orders_without_match", [("a x b y c", "a b c d e")]),
        ("too_short_for_4_grams", [("a b c", "a b c")]),
        ("longer_than_reference", [("a b c d e f g h", "a b c d")]),
    ]
    vocab = ["the", "dog", "bit", "man", "It", "it", "was", "not", "He's", "chat.", "noir,", "3.5", "1-2",
             "(a)", "l'été", "!", "?", "Mr.", "e-mail", "&amp;"]
    for c in range(30):
        pairs = []
        for _ in range(rng.randint(1, 8)):
            ref = words(rng, vocab)
            hyp = ref if rng.random() < 0.2 else (ref[:rng.randint(0, len(ref))] + " " + words(rng, vocab)
                                                   if rng.random() < 0.7 else words(rng, vocab))
            pairs.append((hyp, ref))
        cases.append(("random_%02d" % c, pairs))
    return cases


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    rng = random.Random(20261128)
    with open(out + "/sacrebleu_13a.txt", "w", encoding="utf-8") as f:
        f.write("# generated by tools/make_13a_fixtures.py (sacreBLEU 2.x BLEU() defaults, restated); do not edit\n")
        for text in SEGMENTS + [random_segment(rng) for _ in range(200)]:
            f.write("TOK %s\n" % escape(text))
            f.write("GOT %s\n" % escape(tokenize_13a(text)))
        for name, pairs in corpus_cases(rng):
            f.write("CASE %s\n" % name)
            for h, r in pairs:
                f.write("H %s\n" % escape(h))
                f.write("R %s\n" % escape(r))
            f.write("BLEU %.17g\n" % bleu(pairs))


if __name__ == "__main__":
    main()
