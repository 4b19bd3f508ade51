"""A small hand-written English + Japanese relevance set: one person's profile and questions, each
with the memory it is about. Questions paraphrase rather than repeat (other word forms, a
related word, kana for a kanji word) so that lexical matching alone does not get all of them.

Used by tests/unit/test_relevance_fusion.py (a floor) and benchmarks/fusion_bench.py (the
figures behind the fusion choice in docs/relevance.md). The large generated set lives elsewhere.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memorybot.core.record.domain import Memory

PROFILE = {
    "hike1": "Loves hiking in the Alps every summer",
    "cats1": "Has two cats named Miso and Soba",
    "cello": "Plays the cello in a community orchestra",
    "nurse": "Works night shifts as a nurse at the city hospital",
    "sappo": "Moved to Sapporo last year",
    "matcha": "Drinks matcha every morning before work",
    "portu": "Is studying Portuguese for a trip to Lisbon",
    "vinyl": "Collects jazz vinyl records",
    "peanut": "Is allergic to peanuts",
    "tomato": "Grows cherry tomatoes on the balcony",
    "bike1": "Commutes by bicycle, even in the rain",
    "scifi": "Reads science fiction novels, mostly Ursula K. Le Guin",
    "sister": "Their sister Yuki lives in Osaka and works at a bakery",
    "marathon": "Is training for the Tokyo marathon in March",
    "guitar": "Wants to learn the electric guitar",
    "ja_ramen": "ラーメンが大好きで、特に味噌ラーメンをよく食べる",
    "ja_kyoto": "京都の大学で日本史を勉強している",
    "ja_dog": "柴犬のハチを飼っている",
    "ja_piano": "子供の頃からピアノを習っている",
    "ja_onsen": "週末はよく箱根の温泉に行く",
    "ja_coffee": "コーヒーはブラックしか飲まない",
    "ja_camera": "フィルムカメラで街の写真を撮るのが趣味",
    "ja_move": "来年の春に福岡へ引っ越す予定",
    "ja_baseball": "阪神タイガースのファン",
}

# (question, the memory it is about)
QUESTIONS = [
    ("Any hikes planned in the mountains this year?", "hike1"),
    ("How are your cats doing?", "cats1"),
    ("Do you still play in that orchestra?", "cello"),
    ("Are you working nights at the hospital again?", "nurse"),
    ("How is life in Sapporo?", "sappo"),
    ("Want some green tea? Matcha maybe?", "matcha"),
    ("How is your Portuguese coming along?", "portu"),
    ("I found a jazz record shop", "vinyl"),
    ("This snack has peanut butter in it", "peanut"),
    ("My tomato plants died, how do you grow yours?", "tomato"),
    ("Did you cycle to work in this weather?", "bike1"),
    ("Recommend me a sci-fi novel", "scifi"),
    ("When are you visiting Yuki in Osaka?", "sister"),
    ("How is the marathon training going?", "marathon"),
    ("Did you buy a guitar yet?", "guitar"),
    ("おすすめのラーメン屋ある？", "ja_ramen"),
    ("京都で何を勉強しているの？", "ja_kyoto"),
    ("ハチは元気？", "ja_dog"),
    ("ピアノの発表会はいつ？", "ja_piano"),
    ("箱根の温泉はどうだった？", "ja_onsen"),
    ("コーヒーに砂糖は入れる？", "ja_coffee"),
    ("最近どんな写真を撮ってる？", "ja_camera"),
    ("福岡への引っ越しの準備は進んでる？", "ja_move"),
    ("タイガース勝った？", "ja_baseball"),
]

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def profile(user_id: str = "u1") -> list[Memory]:
    """The profile, oldest first (an hour apart), in PROFILE's order."""
    return [
        Memory(user_id, memory_id, text, T0 + timedelta(hours=i), T0 + timedelta(hours=i))
        for i, (memory_id, text) in enumerate(PROFILE.items())
    ]
