"""Selection: the ten a reader sees are the relevant ten (core/prompting/selection.py)."""

from __future__ import annotations

from datetime import timedelta

from fakes import T0
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.core.prompting.selection import is_kana_grammar, select, tokens
from memorybot.core.record.domain import Embedding, Memory


def profile(*texts: str, user: str = "u1") -> list[Memory]:
    """Memories oldest first: the first text is the oldest (one hour apart)."""
    return [
        Memory(user, f"m{i:02d}", text, T0 + timedelta(hours=i), T0 + timedelta(hours=i))
        for i, text in enumerate(texts)
    ]


FILLER_EN = [
    "Works as a nurse at the city hospital",
    "Has two cats named Miso and Soba",
    "Plays the guitar in a small band",
    "Is learning to bake sourdough bread",
    "Drives a red bicycle to work",
    "Supports the local football club",
    "Reads science fiction novels",
    "Grows tomatoes on the balcony",
    "Watches anime on Friday nights",
    "Is allergic to peanuts",
    "Collects vinyl records",
]
FILLER_JA = [
    "看護師として市立病院で働いている",
    "猫を二匹飼っている",
    "週末はギターを弾いている",
    "パン作りを習っている",
    "赤い自転車で通勤している",
    "地元のサッカーチームを応援している",
    "SF小説をよく読む",
    "ベランダでトマトを育てている",
    "金曜の夜はアニメを見る",
    "ピーナッツアレルギーがある",
    "レコードを集めている",
]


def ids(memories: list[Memory]) -> list[str]:
    return [m.memory_id for m in memories]


def test_ten_or_fewer_are_all_read_newest_first_whatever_the_query():
    memories = profile(*FILLER_EN[:10])
    chosen = select(memories, "tell me about my cats")
    assert ids(chosen) == [f"m{i:02d}" for i in range(9, -1, -1)]


def test_the_oldest_fact_comes_back_when_the_person_mentions_it_again():
    memories = profile("Loves hiking in the Alps", *FILLER_EN)  # 12: the hiking fact is the oldest
    newest_ten = select(memories, "")
    assert "m00" not in ids(newest_ten)  # without a signal: recency, as the design reads
    chosen = select(memories, "I went hiking again last weekend")
    assert len(chosen) == 10
    assert ids(chosen)[0] == "m00"


def test_japanese_is_matched_by_character_bigrams():
    memories = profile("妹は大阪に住んでいる", *FILLER_JA)
    chosen = select(memories, "来月、大阪の妹に会いに行く")
    assert ids(chosen)[0] == "m00"
    assert "大阪" in tokens("来月、大阪の妹に会いに行く")


def test_mixed_scripts_in_one_profile():
    memories = profile("Their sister Yuki lives in 大阪", *FILLER_EN, *FILLER_JA)
    assert ids(select(memories, "大阪に行くよ"))[0] == "m00"
    assert ids(select(memories, "Visiting Yuki soon"))[0] == "m00"


def test_ties_and_no_signal_fall_back_to_recency():
    memories = profile(*FILLER_EN)
    # "weather" matches nothing: the newest ten, newest first
    assert ids(select(memories, "what's the weather like?")) == [f"m{i:02d}" for i in range(10, 0, -1)]
    # two memories that match equally: the newer one first, then the rest by recency
    tied = profile("Likes green tea", *FILLER_EN, "Likes black tea")
    chosen = ids(select(tied, "tea"))
    assert chosen[:2] == ["m12", "m00"]
    assert chosen[2:] == [f"m{i:02d}" for i in range(11, 3, -1)]


def test_stop_words_and_clitics_do_not_count_as_a_match():
    memories = profile("I'm my own boss", *FILLER_EN)
    assert "m00" not in ids(select(memories, "I'm so tired, my day was long"))


def test_light_normalisation_matches_word_forms():
    memories = profile("Went on a long hike with their dogs", *FILLER_EN)
    assert ids(select(memories, "hiking with my dog"))[0] == "m00"
    assert tokens("Hikes HIKING hiked") == ["hik", "hik", "hik"]


def test_the_limit_is_respected_and_nothing_is_invented():
    memories = profile(*FILLER_EN, *FILLER_JA)
    chosen = select(memories, "guitar ギター", limit=3)
    assert len(chosen) == 3
    assert {"m02", "m13"} <= set(ids(chosen))


def test_a_semantic_match_lifts_a_memory_without_shared_words():
    """Cosine counts only between vectors of the same model."""
    memories = profile("Is vegetarian", *FILLER_EN)
    query_vec = Embedding("model-a", (1.0, 0.0))
    with_vectors = [
        Memory(
            m.user_id,
            m.memory_id,
            m.text,
            m.created_at,
            m.updated_at,
            embedding=Embedding("model-a", (1.0, 0.0) if m.memory_id == "m00" else (0.0, 1.0)),
        )
        for m in memories
    ]
    assert ids(select(with_vectors, "no meat for me please", query_embedding=query_vec))[0] == "m00"
    other_model = Embedding("model-b", (1.0, 0.0))
    assert "m00" not in ids(select(with_vectors, "no meat for me please", query_embedding=other_model))


def test_memories_without_a_vector_still_compete_lexically():
    model = OfflineEmbeddingModel()
    memories = profile("Loves hiking in the Alps", *FILLER_EN)
    # only the fillers have vectors (say the hiking fact was imported and not yet backfilled)
    mixed = [m if m.memory_id == "m00" else _with_vector(m, model) for m in memories]
    chosen = select(mixed, "hiking trip", query_embedding=model.embed_one("hiking trip"))
    assert "m00" in ids(chosen)


def _with_vector(memory: Memory, model: OfflineEmbeddingModel) -> Memory:
    return Memory(
        memory.user_id,
        memory.memory_id,
        memory.text,
        memory.created_at,
        memory.updated_at,
        embedding=model.embed_one(memory.text),
    )


def test_offline_embeddings_are_deterministic_normalised_and_stamped():
    model = OfflineEmbeddingModel(dimensions=64)
    a, b = model.embed(["Loves hiking in the Alps", "Loves hiking in the Alps"])
    assert a == b
    assert a.model == "offline-hashed-ngrams-v1@64" == model.model_id
    assert len(a.vector) == 64
    assert abs(sum(x * x for x in a.vector) - 1.0) < 1e-9
    near, far = model.embed(["went hiking in the alps", "妹は大阪に住んでいる"])
    dot = sum(x * y for x, y in zip(a.vector, near.vector, strict=True))
    dot_far = sum(x * y for x, y in zip(a.vector, far.vector, strict=True))
    assert dot > 0.3 > dot_far


def test_a_question_sharing_only_particles_does_not_outrank_a_content_word():
    """Hiragana-only bigrams (って, てい, だっ) are mostly grammar: a memory that shares only
    those with the question ranks below one that shares a content word (here 園芸)."""
    grammar = "友だちっていつもそうだったっけ"  # shares only kana grammar with the question
    content = "週末は園芸をする"  # shares 園芸, once
    memories = profile(content, grammar, *FILLER_JA)
    question = "前にやってたって園芸のこと、どうだったっけ？"
    assert set(tokens(question)) & set(tokens(grammar)) <= {t for t in tokens(question) if is_kana_grammar(t)}
    assert ids(select(memories, question))[:2] == ["m00", "m01"]


def test_japanese_terms_keep_words_whole_and_skip_word_boundaries():
    # 々 repeats the kanji before it: part of the word, not a break in it
    assert "菜々" in tokens("菜々子は看護師") and "々子" in tokens("菜々子は看護師")
    # from hiragana into kanji is where a new word starts (a particle, then a noun): no term
    assert "の近" not in tokens("駅の近くに住んでいる") and "近く" in tokens("駅の近くに住んでいる")
    assert is_kana_grammar("って") and not is_kana_grammar("住ん") and not is_kana_grammar("tea")


def test_shared_kana_grammar_gives_no_lexical_rank_in_fusion():
    """With a model's vectors, a memory sharing only hiragana-only bigrams with the question does
    not get a lexical rank on top of its semantic one: the model's best stays first."""
    grammar = "友だちっていつもそうだったっけ"
    liked = "ウナギが大好物"
    memories = profile(liked, grammar, *FILLER_JA)
    query_vec = Embedding("model-a", (1.0, 0.0, 0.0))

    def vector(memory: Memory) -> tuple[float, ...]:
        if memory.memory_id == "m00":
            return (1.0, 0.0, 0.0)  # the model's best
        if memory.memory_id == "m01":
            return (0.6, 0.8, 0.0)  # its second
        return (0.0, 0.0, 1.0)

    with_vectors = [
        Memory(m.user_id, m.memory_id, m.text, m.created_at, m.updated_at, embedding=Embedding("model-a", vector(m)))
        for m in memories
    ]
    assert ids(select(with_vectors, "前はどうだったっけ、好きな魚って何？", query_embedding=query_vec))[0] == "m00"
