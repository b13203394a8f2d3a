"""Token estimates for providers that report no usage.

A heuristic, honest about being one (spans carry ``infersight.usage.estimated=true``): CJK
characters count as one token each (BPE vocabularies rarely merge them), everything else as one
token per four characters, the usual English average.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    return cjk + (rest + 3) // 4
