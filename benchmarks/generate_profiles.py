"""Generates the long profiles the recall benchmark reads (benchmarks/data/profiles_{en,ja}.jsonl).

`python -m benchmarks.generate_profiles` rewrites both files; with the fixed seed the output is
byte-for-byte the same on every run (a unit test checks the committed files against it).

Each line is one person: 100-500 short facts of the kind the bot remembers (preferences,
people in their life, pets, ongoing situations, plans), written months apart; questions the
person might ask the bot, each naming the fact(s) that answer it; and re-mentions, lines in
which the person says an existing fact again in other words.

The questions and re-mentions are built to paraphrase: they refer to a fact by a synonym, a
broader class ("noodle soup" for ramen, "ドイツ" for ベルリン), another word form or script
(鰻 / うなぎ), or a person's name instead of the relation, and use other predicates than the fact
("based in" for "lives in"). Some keep the fact's key noun (people do say "ramen" again); which
template is used is a uniform random choice, fixed before any selection code was run against it.
The Japanese facts are written as Japanese (no spaces, kanji/hiragana/katakana mixed), with their
own vocabulary, not translated from the English.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 20261201
DATA_DIR = Path(__file__).parent / "data"
PEOPLE = 10  # per language, profile sizes spread evenly over 100..500
MIN_FACTS, MAX_FACTS = 100, 500
QUESTIONS = 30  # per person
RE_MENTIONS = 15  # per person
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # the questions are asked now
HISTORY_DAYS = 300  # facts were written over the ten months before
UPDATED_SHARE = 0.2  # facts that were updated some time after they were written

# ---------------------------------------------------------------- vocabularies
# An item: n = the name the fact uses; a = other ways to say it; c = a broader class.
V = dict[str, Any]


def _items(rows: str) -> list[V]:
    """'name | alt; alt | class' lines -> items."""
    out = []
    for line in rows.strip().splitlines():
        name, alts, cls = (part.strip() for part in line.split("|"))
        out.append({"n": name, "a": [a.strip() for a in alts.split(";")], "c": cls})
    return out


EN_FOODS = _items("""
ramen | tonkotsu bowls; a steaming bowl of noodle broth | noodle soup
sushi | nigiri; raw fish on rice | Japanese food
tacos | al pastor; tortillas with carnitas | Mexican food
pho | Vietnamese beef broth; that Hanoi noodle soup | soup
dark chocolate | bitter cocoa bars; 85% cacao | sweets
cheesecake | baked cheese tart; New York style cake | dessert
spicy curry | vindaloo; fiery masala | Indian food
pizza | margherita; wood-fired pies | Italian food
dumplings | gyoza; potstickers | Chinese food
blue cheese | gorgonzola; stilton | dairy
oysters | raw shellfish; bivalves on ice | seafood
mushrooms | shiitake; fungi | vegetables
cilantro | coriander leaves; that soapy herb | herbs
natto | fermented soybeans; sticky beans | breakfast
croissants | buttery pastries; pain au beurre | baked goods
kimchi | fermented cabbage; spicy pickled napa | Korean food
falafel | chickpea fritters; deep-fried chickpea balls | Middle Eastern food
ribs | smoked pork ribs; slow-cooked barbecue | barbecue
mango | Alphonso; sticky tropical fruit | fruit
durian | that spiky fruit; the smelly king of fruits | fruit
liver | offal; organ meat | meat
eggplant | aubergine; brinjal | vegetables
pancakes | flapjacks; a stack with maple syrup | breakfast
tofu | bean curd; soy blocks | protein
anchovies | tiny salted fish; boquerones | fish
licorice | black liquorice; salmiak | candy
eel | unagi; grilled freshwater fish | Japanese food
lamb | mutton; roast leg of lamb | meat
olives | kalamata; brined green fruit | snacks
pineapple on pizza | hawaiian pizza; ham and pineapple pie | Italian food
""")
EN_HOBBIES = _items("""
rock climbing | bouldering; climbing walls at the gym | sport
trail running | jogging on mountain paths; off-road runs | exercise
knitting | making scarves from yarn; needlework | craft
chess | online blitz; the royal game | board game
baking sourdough | making bread from a starter; bread baking | baking
birdwatching | spotting warblers with binoculars; birding | outdoor pastime
photography | shooting film; taking pictures | art
the cello | bowing a string instrument; cello lessons | music
gardening | growing tomatoes on the balcony; planting vegetables | outdoor pastime
surfing | catching waves; paddling out on a board | water sport
pottery | throwing clay on the wheel; ceramics | craft
video games | gaming; console marathons | entertainment
watercolour painting | painting with watercolours; brushwork landscapes | art
swimming | doing laps at the pool; front crawl | exercise
yoga | stretching on the mat; vinyasa | exercise
road cycling | riding a racing bike; long rides | sport
fishing | casting a line; fly fishing | outdoor pastime
calligraphy | brush lettering; hand lettering | art
board games | tabletop nights; Catan evenings | game
karaoke | singing in a booth; belting out songs | nightlife
hiking | walking in the mountains; trekking | outdoor pastime
origami | paper folding; folding cranes | craft
skateboarding | riding a skateboard; kickflips | sport
stargazing | looking at the stars through a telescope; astronomy | hobby
woodworking | building furniture; carpentry | craft
salsa dancing | latin dance classes; dancing salsa | dance
camping | sleeping in a tent; nights under canvas | outdoor pastime
tennis | hitting balls on the court; doubles matches | sport
crossword puzzles | crosswords; the Sunday puzzle | puzzle
journaling | keeping a diary; writing in a notebook every night | writing
""")
EN_CITIES = _items("""
Berlin | Germany | German
Lisbon | Portugal | Portuguese
Osaka | Japan | Japanese
Toronto | Canada | Canadian
Melbourne | Australia | Australian
Seoul | Korea | Korean
Mexico City | Mexico | Mexican
Edinburgh | Scotland | Scottish
Barcelona | Spain | Spanish
Prague | the Czech Republic | Czech
Hanoi | Vietnam | Vietnamese
Istanbul | Turkey | Turkish
Nairobi | Kenya | Kenyan
Buenos Aires | Argentina | Argentinian
Oslo | Norway | Norwegian
Dublin | Ireland | Irish
Chicago | the States | American
Taipei | Taiwan | Taiwanese
Cape Town | South Africa | South African
Reykjavik | Iceland | Icelandic
Vienna | Austria | Austrian
Marrakesh | Morocco | Moroccan
Lima | Peru | Peruvian
Helsinki | Finland | Finnish
Bangkok | Thailand | Thai
""")
EN_JOBS = _items("""
nurse | works shifts at a hospital; looks after patients | healthcare
software engineer | writes code; builds apps | tech
primary school teacher | teaches kids; runs a classroom | education
chef | cooks in a restaurant kitchen; runs a kitchen line | hospitality
lawyer | practises law; works at a law firm | legal work
accountant | does the books; handles tax returns | finance
electrician | does wiring; fixes fuse boxes | the trades
graphic designer | designs logos; does layouts and branding | design
firefighter | works at the fire station; puts out fires | emergency services
pharmacist | works behind a drugstore counter; dispenses prescriptions | healthcare
architect | designs buildings; draws up house plans | construction
journalist | writes for a newspaper; reports the news | media
vet | treats animals; runs an animal clinic | animal care
pilot | flies planes; flies long-haul routes | aviation
barista | makes coffee at a café; pulls espresso shots | hospitality
librarian | works among the stacks; runs the library desk | public service
dentist | fixes teeth; runs a dental practice | healthcare
plumber | fixes pipes; unblocks drains | the trades
translator | translates documents; turns contracts into English | languages
data analyst | crunches numbers; builds dashboards | tech
""")
EN_RELATIONS = _items("""
older sister | big sis; sibling | f
younger brother | kid brother; little bro | m
mother | mum; mom | f1
father | dad; old man | m1
grandmother | grandma; nan | f
grandfather | grandpa; granddad | m
cousin | cousin on my mum's side; relative | x
uncle | mum's brother; uncle on my dad's side | m
aunt | auntie; dad's sister | f
best friend | closest mate; bestie | x1
coworker | colleague; workmate | x
roommate | flatmate; housemate | x
neighbour | the person next door; guy across the hall | x
partner | other half; significant other | x1
son | boy; eldest kid | m
daughter | girl; youngest kid | f
boss | manager; team lead | x1
childhood friend | old school friend; friend from primary school | x
""")
# Given names by gender, so that a sister is not called Felix (the relation's flag: f, m or x for either).
EN_NAMES = {
    "f": """Clara Emma Farah Hana Julia Lena Nina Priya Rosa Uma Wendy Yara Zoe Alice Chloe Elise Grace Iris Kira Maya
    Olga Ruth Tara Vera Ximena Zara Bea Dina Fatima Holly Jade Mei Nadia Petra Sofia Ursula Wanda Amara Celia Esther
    Greta Ilse Keiko Mira Ola""".split(),
    "m": """Ben Diego George Ivan Kofi Marco Omar Quinn Sam Tomas Victor Xavier Bruno Dev Felix Hugo Jonas Leo Noah
    Pablo Stefan Umar Will Yusuf Anton Carl Eli Gus Ike Kai Luca Oscar Rafael Theo Vik Yosef Zeke Boris Dmitri Finn
    Hamid Joel Lars Nils Pedro""".split(),
}
EN_SITUATIONS = _items("""
is expecting a baby | a baby on the way; the pregnancy | family news
got engaged | the engagement; the wedding plans | big news
broke a leg | a fractured shin; the leg in a cast | injury
is studying for the bar exam | law exam prep; the bar | exams
is job hunting | the job search; being between jobs | career
just moved house | a new flat; the change of address | move
started university | the first year at uni; freshman life | studies
is in hospital | a hospital stay; the time on a ward | health
retired this year | retirement; the end of their career | career
adopted a puppy | a new dog; the rescue pup | new pet
""")
EN_SELF_SITUATIONS = _items("""
Is training for a half marathon | running the 21 km race; race training | running
Is studying for the JLPT N2 | the Japanese proficiency test; kanji drills | exams
Is recovering from knee surgery | the operation on the knee; physio after the op | health
Is renovating the kitchen | redoing the cooking area; new cabinets and worktops | home project
Is saving up for a car | putting money aside for a vehicle; a car fund | money
Is looking for a new job | job hunting; applying for positions | career
Is learning to drive | driving lessons; the driving test | skills
Is on a low-carb diet | cutting bread and rice; keto | health
Is writing a novel | a book manuscript; the draft of the book | writing
Is planning a wedding | getting hitched; the venue and guest list | big event
Is looking for a new flat | apartment hunting; viewing places to rent | home
Has trouble sleeping lately | insomnia; lying awake at night | health
Is cutting down on coffee | less caffeine; giving up espresso | habits
Takes night classes in accounting | evening courses in bookkeeping; the accounting course | studies
Volunteers at an animal shelter | helping rescued animals; shifts at the rescue | volunteering
Has back pain | a sore lower back; lumbar trouble | health
""")
EN_ITEMS = _items("""
an electric bike | an e-bike; a pedal-assist bicycle | bicycle
a mechanical keyboard | a clicky keyboard; a board with cherry switches | computer gear
a standing desk | an adjustable desk; a sit-stand workstation | furniture
a drone | a quadcopter; something to film from the air | gadget
a telephoto lens | a zoom lens; a long lens | photo gear
an espresso machine | a coffee maker; something to pull shots at home | kitchen appliance
a tent | a two-person shelter; camping gear | outdoor gear
a digital piano | an 88-key keyboard; a stage piano | instrument
a robot vacuum | a roomba; an automatic cleaner | appliance
a used car | a second-hand hatchback; an old runabout | car
a smartwatch | a fitness tracker; a watch that counts steps | wearable
a sofa bed | a couch that folds out; a futon sofa | furniture
""")
EN_GENRES = _items("""
jazz | bebop; Coltrane records | music
heavy metal | thrash; loud guitars | music
K-pop | Korean idol groups; BTS | music
classical music | symphonies; Bach | music
hip hop | rap; boom bap | music
city pop | 80s Japanese pop; Mariya Takeuchi | music
folk | acoustic singer-songwriters; banjo tunes | music
techno | electronic music; Berlin club sets | music
bossa nova | Brazilian jazz; João Gilberto | music
punk | the Ramones; three-chord songs | music
""")
EN_ALLERGIES = _items("""
peanuts | nuts; peanut butter | food
shellfish | shrimp and crab; prawns | food
pollen | hay fever; spring blossoms | seasonal
cats | cat dander; a kitten | animals
dust mites | dust; dusty rooms | home
penicillin | antibiotics; amoxicillin | medicine
gluten | wheat; bread and pasta | food
lactose | dairy; milk | food
""")
EN_SPECIES = _items("""
cat | kitty; moggy | feline
dog | pup; doggo | canine
rabbit | bunny; lop-ear | small animal
parrot | budgie; bird | bird
hamster | hammy; little rodent | rodent
tortoise | shell-back; reptile | reptile
""")
EN_PET_NAMES = "Mochi Biscuit Pepper Luna Max Nori Pickles Ziggy Coco Tofu Olive Rocket".split()
EN_PET_HEALTH = _items("""
kidney problems | a renal condition; trouble with its kidneys | health
a sore paw | limping; an injured foot | injury
to lose weight | a diet; being a bit chubby | weight
bad teeth | a dental problem; tooth trouble | health
""")
EN_MONTHS = [
    (m, s)
    for m, s in zip(
        "January February March April May June July August September October November December".split(),
        "winter winter spring spring spring summer summer summer autumn autumn autumn winter".split(),
        strict=True,
    )
]

JA_FOODS = _items("""
ラーメン | 豚骨の麺; 中華そば | 麺類
寿司 | お寿司; 握り | 和食
納豆 | 発酵した大豆; ねばねばの豆 | 朝ごはん
うなぎ | 鰻の蒲焼き; うな重 | 和食
焼き鳥 | 串焼き; ねぎま | 居酒屋メニュー
餃子 | ギョーザ; 焼いた皮包み | 中華
パクチー | コリアンダー; 香菜 | ハーブ
ピーマン | 青椒; 緑の苦い野菜 | 野菜
椎茸 | しいたけ; きのこ | 野菜
チョコレート | チョコ; カカオのお菓子 | 甘い物
牡蠣 | かき; 生ガキ | 海鮮
レバー | 肝; 内臓系 | 肉
梅干し | すっぱい梅; 紀州梅 | ご飯のお供
トマト | 赤い野菜; プチトマト | 野菜
もつ鍋 | ホルモン鍋; 博多の鍋 | 鍋料理
たこ焼き | 粉もん; 大阪のソース味 | 軽食
天ぷら | 海老天; 衣をつけた揚げ物 | 和食
刺身 | お造り; 生魚 | 海鮮
蕎麦 | そば; ざる | 麺類
うどん | 讃岐のコシのある麺; 太い麺 | 麺類
セロリ | 香味野菜; スジのある野菜 | 野菜
ゴーヤ | 苦瓜; チャンプルー | 野菜
チーズケーキ | ベイクドの洋菓子; レアチーズ | デザート
あんこ | 小豆; つぶあん | 和菓子
キムチ | 韓国の漬物; 白菜の辛い漬物 | 韓国料理
タピオカ | 黒いつぶつぶ入りのミルクティー; タピオカドリンク | 飲み物
激辛料理 | 唐辛子たっぷりの料理; 辛い物 | 料理
グリーンピース | えんどう豆; 緑の豆 | 野菜
唐揚げ | から揚げ; 鶏の揚げ物 | 揚げ物
ナス | 茄子; 焼きなす | 野菜
""")
JA_HOBBIES = _items("""
ボルダリング | 壁登り; クライミング | スポーツ
ジョギング | ランニング; 朝走ること | 運動
編み物 | 毛糸でマフラー作り; ニット | 手芸
将棋 | 詰将棋; 駒を指すこと | ボードゲーム
パン作り | 自家製の食パン; 生地をこねること | 料理
写真 | カメラ; 撮影 | 趣味
釣り | 海釣り; 竿を出すこと | アウトドア
書道 | 習字; 筆で字を書くこと | 習い事
家庭菜園 | ベランダでトマトを育てること; 畑仕事 | 園芸
サーフィン | 波乗り; ボードで海に出ること | マリンスポーツ
陶芸 | 焼き物; ろくろ | ものづくり
ゲーム | テレビゲーム; スイッチ | 遊び
水彩画 | 絵を描くこと; 絵の具 | 芸術
水泳 | プールで泳ぐこと; クロール | 運動
ヨガ | ストレッチ; ポーズをとること | 運動
ロードバイク | 自転車; サイクリング | スポーツ
カラオケ | 歌うこと; ヒトカラ | 娯楽
登山 | 山登り; ハイキング | アウトドア
折り紙 | 紙を折ること; 鶴を折ること | 手芸
キャンプ | テント泊; ソロキャンプ | アウトドア
テニス | 硬式; ラケットを振ること | スポーツ
ピアノ | 鍵盤; 弾き語り | 楽器
茶道 | お茶のお点前; 抹茶を点てること | 習い事
生け花 | 華道; お花 | 習い事
ダンス | 踊り; ヒップホップの振り付け | 運動
筋トレ | ジム通い; ウエイトトレーニング | 運動
読書 | 本を読むこと; 小説 | 趣味
ギター | 弦楽器; アコギ | 楽器
天体観測 | 星を見ること; 望遠鏡 | 趣味
盆栽 | 小さな木を育てること; 松の鉢植え | 園芸
""")
JA_CITIES = _items("""
札幌 | 北海道; 雪まつりの街 | 北海道
福岡 | 九州; 博多 | 九州
那覇 | 沖縄; 南の島 | 沖縄
金沢 | 石川; 北陸 | 北陸
仙台 | 東北; 宮城 | 東北
京都 | 関西; 古都 | 関西
神戸 | 兵庫; 港町 | 関西
広島 | 中国地方; 瀬戸内 | 中国地方
長崎 | 九州; 坂の街 | 九州
松山 | 四国; 愛媛 | 四国
函館 | 北海道; 道南 | 北海道
ソウル | 韓国; お隣の国 | 韓国
台北 | 台湾; 夜市の街 | 台湾
バンコク | タイ; 東南アジア | タイ
ホノルル | ハワイ; ワイキキ | ハワイ
パリ | フランス; ヨーロッパ | フランス
ロンドン | イギリス; 英国 | イギリス
ニューヨーク | アメリカ; 米国 | アメリカ
シドニー | オーストラリア; 南半球 | オーストラリア
バルセロナ | スペイン; ガウディの街 | スペイン
ウィーン | オーストリア; 音楽の都 | オーストリア
ハノイ | ベトナム; 東南アジア | ベトナム
ベルリン | ドイツ; 欧州 | ドイツ
軽井沢 | 長野; 避暑地 | 長野
高松 | 香川; 讃岐 | 四国
""")
JA_JOBS = _items("""
看護師 | 病院勤め; 夜勤のある仕事 | 医療
エンジニア | プログラマー; アプリ開発 | IT
小学校の先生 | 教師; 担任 | 教育
料理人 | 板前; 厨房に立つ仕事 | 飲食
弁護士 | 法律事務所勤め; 法律家 | 法律
会計士 | 経理; 税務 | 金融
電気工事士 | 電気屋; 配線工事 | 職人
デザイナー | ロゴ作り; グラフィック | デザイン
消防士 | 消防署勤め; 火消し | 公務員
薬剤師 | 薬局; 調剤 | 医療
建築士 | 設計事務所; 家の設計 | 建築
記者 | 新聞社; 取材 | マスコミ
獣医 | 動物病院; 動物のお医者さん | 動物
パイロット | 飛行機の操縦; 機長 | 航空
美容師 | 美容院; カット | 美容
保育士 | 保育園; 子どもの世話 | 保育
歯医者 | 歯科医; 歯科 | 医療
公務員 | 役所勤め; 市役所 | 行政
翻訳家 | 翻訳の仕事; 通訳 | 語学
銀行員 | 銀行勤め; 窓口 | 金融
""")
JA_RELATIONS = _items("""
姉 | お姉ちゃん; 姉貴 | f
兄 | お兄ちゃん; 兄貴 | m
弟 | 下の弟; 弟くん | m
妹 | 妹ちゃん; 下の妹 | f
母 | お母さん; おかん | f1
父 | お父さん; 親父 | m1
祖母 | おばあちゃん; ばあちゃん | f
祖父 | おじいちゃん; じいちゃん | m
いとこ | 従兄弟; 親戚の子 | x
叔父 | おじさん; 母方のおじ | m
叔母 | おばさん; 父方のおば | f
親友 | 一番の友達; 大親友 | x1
同僚 | 職場の人; 会社の同期 | x
ルームメイト | 同居人; 一緒に住んでる人 | x
夫 | 旦那; うちの人 | m1
妻 | 奥さん; 嫁 | f1
息子 | うちの子; 長男 | m
娘 | うちの娘; 長女 | f
上司 | 部長; 課長 | x1
幼なじみ | 昔からの友達; 小学校からの友達 | x
""")
JA_NAMES = {
    "f": """愛子 美咲 由美 さくら 陽菜 結衣 真由美 彩 恵 千尋 舞 香織 葵 優子 明美 奈々 理恵 菜々子 美穂 智子 みゆき ゆうこ まゆ
    リナ マリア 花子 綾香 涼子 春香 沙織 琴音 瑞穂 早紀 桃子 あかり 茜 麻衣 ちひろ 七海 佳奈 里奈 詩織 瞳 まなみ 絢子""".split(),
    "m": """健太 翔太 大輔 拓也 蓮 悠斗 直樹 亮 誠 和也 隆 健二 颯太 修 光 俊介 大和 浩二 翼 悠真 たけし ひろし ケン
    ジョン 陸 聡 一郎 圭 達也 雄大 日向 孝 慎也 大樹 潤 勇気 康介 俊 航 正人 哲也 亮太 剛 貴之 晴人""".split(),
}
JA_SITUATIONS = _items("""
もうすぐ親になる | 出産予定; おめでた | 家族のこと
婚約した | 結婚の話; 入籍の予定 | お祝い
足を骨折した | 脚のけが; ギプス | 怪我
司法試験の勉強中 | 法律の試験; 受験勉強 | 試験
就職活動中 | 仕事探し; 就活 | 仕事
引っ越したばかり | 新居; 新しい家 | 住まい
大学に入学した | 新入生; 大学生活 | 学校
入院している | 入院中; 入院生活 | 体調
定年退職した | リタイア; 退職 | 仕事
子犬を迎えた | 新しいワンちゃん; 保護犬 | ペット
""")
JA_SELF_SITUATIONS = _items("""
ハーフマラソンに向けて練習中 | 21キロのレース; 大会に向けた走り込み | 大会
英検準一級の勉強中 | 英語の資格試験; 単語帳 | 試験
膝の手術から回復中 | ひざのオペ; リハビリ | 体調
台所をリフォーム中 | キッチンの改装; 流し台の工事 | 家のこと
車を買うために貯金中 | マイカー資金; 自動車用の積み立て | お金
転職活動中 | 仕事探し; 面接 | 仕事
教習所に通っている | 運転免許; 仮免 | 免許
糖質制限をしている | ご飯やパンを控えている; ロカボ | 食事
小説を書いている | 長編の原稿; 物語の執筆 | 創作
結婚式の準備中 | 挙式の段取り; 式場選び | 行事
引っ越し先を探している | 新しい部屋探し; 物件の内見 | 住まい
最近眠れない | 不眠; 寝付きが悪い | 体調
コーヒーを控えている | カフェイン断ち; 珈琲をやめること | 習慣
簿記の夜間講座に通っている | 経理の勉強; 夜の講座 | 勉強
保護猫のボランティアをしている | 猫の保護活動; 譲渡会の手伝い | ボランティア
腰痛に悩んでいる | 腰が痛い; ぎっくり腰 | 体調
""")
JA_ITEMS = _items("""
電動自転車 | アシスト付きのチャリ; 電チャリ | 自転車
メカニカルキーボード | カチャカチャ鳴る鍵盤; 自作キーボード | パソコン周り
スタンディングデスク | 立って使う机; 昇降デスク | 家具
ドローン | 空撮用の機体; ラジコンヘリ | ガジェット
望遠レンズ | ズームレンズ; 長玉 | カメラ用品
エスプレッソマシン | コーヒーメーカー; 家でラテを淹れる機械 | 家電
テント | 二人用の幕; キャンプ道具 | アウトドア用品
電子ピアノ | 八十八鍵; 家で弾ける鍵盤楽器 | 楽器
ロボット掃除機 | ルンバ; 自動で掃除してくれる機械 | 家電
中古車 | 中古の軽; 型落ちの車 | 車
スマートウォッチ | 腕時計型の端末; 歩数を数える時計 | ガジェット
ソファベッド | 寝られる長椅子; ソファ | 家具
""")
JA_GENRES = _items("""
ジャズ | モダンジャズ; サックスの曲 | 音楽
ヘヴィメタル | メタル; 激しいギター | 音楽
K-POP | 韓国のアイドル; ケーポップ | 音楽
クラシック | オーケストラ; 交響曲 | 音楽
ヒップホップ | ラップ; 日本語ラップ | 音楽
シティポップ | 80年代の曲; 山下達郎 | 音楽
演歌 | こぶしの効いた歌; 演歌歌手 | 音楽
アニソン | アニメの曲; 主題歌 | 音楽
ボサノバ | ブラジルの音楽; ジョビン | 音楽
パンク | 三つのコードの曲; パンクロック | 音楽
""")
JA_ALLERGIES = _items("""
ピーナッツ | 落花生; ナッツ類 | 食べ物
エビやカニ | 甲殻類; 海老 | 食べ物
花粉 | 花粉症; スギ | 季節
猫 | 猫の毛; ネコ | 動物
蕎麦 | そば粉; 十割そば | 食べ物
卵 | たまご; 玉子焼き | 食べ物
乳製品 | 牛乳; チーズ | 食べ物
小麦 | グルテン; パンやパスタ | 食べ物
""")
JA_SPECIES = _items("""
猫 | ねこ; ニャンコ | 動物
犬 | ワンちゃん; わんこ | 動物
うさぎ | ウサギ; 兎 | 小動物
インコ | 小鳥; セキセイ | 鳥
ハムスター | ハムちゃん; ジャンガリアン | 小動物
亀 | カメ; 甲羅のある子 | 爬虫類
""")
JA_PET_NAMES = "モチ きなこ ポチ タマ ココ ソラ マロン ハナ コタロウ ルナ レオ チョコ".split()
JA_PET_HEALTH = _items("""
腎臓が弱い | 腎臓病; 腎臓の数値 | 健康
足を痛めている | びっこを引いている; 足のけが | 怪我
ダイエット中 | 太り気味; 体重管理 | 体重
歯が悪い | 歯周病; 歯の病気 | 健康
""")
JA_MONTHS = [
    (f"{i}月", s) for i, s in enumerate("冬 冬 春 春 春 夏 夏 夏 秋 秋 秋 冬".split(), start=1)
]  # "1月" .. "12月", with the season a question may name instead

# ---------------------------------------------------------------- templates
# Per kind: fact texts (the memory as the bot wrote it), questions (what the person asks the bot),
# re-mentions (the person saying the fact again). Fields: n/a/c = the item's name/alt/class;
# p/r/ra = a person's name/relation/relation alt; m/s = month/season; pn/sp/spa = pet name/species/alt;
# y/yo = an age ("3" / "3 years old").
T = dict[str, dict[str, list[str]]]
EN_T: T = {
    "food_like": {
        "fact": ["Loves {n}", "Is a big fan of {n}", "Favourite food is {n}"],
        "q": [
            "I'm starving, which {c} do I always crave?",
            "Know a good place for {a}? You know how I feel about it",
            "Would {n} be a safe bet if you were cooking for me?",
        ],
        "re": ["Honestly I could live on {a}", "I had {n} again yesterday, still my absolute favourite"],
    },
    "food_dislike": {
        "fact": ["Can't stand {n}", "Dislikes {n}", "Won't eat {n}"],
        "q": [
            "Is there any {c} I refuse to touch?",
            "Someone's serving {a} at the party, is that a problem for me?",
            "Remind me, what's my problem with {n} again?",
        ],
        "re": [
            "Ugh, someone offered me {a} and I still couldn't bring myself to eat it",
            "I really hate {n}, always have",
        ],
    },
    "hobby": {
        "fact": ["Spends most weekends on {n}", "Has been into {n} for years", "Spends free time on {n}"],
        "q": [
            "What {c} do I usually spend my Saturdays on?",
            "Am I the kind of person who likes {a}?",
            "How long have I been doing {n} now?",
        ],
        "re": ["Spent the weekend on {a} again, I never get tired of it", "My Sundays are still all about {n}"],
    },
    "hobby_new": {
        "fact": ["Recently took up {n}", "Started {n} a few weeks ago"],
        "q": ["Which new {c} did I pick up lately?", "Didn't I just get into {a}?", "How's my {n} going, any idea?"],
        "re": ["I'm still pretty new to {a} but loving it", "I only began {n} recently, it's hard!"],
    },
    "hobby_want": {
        "fact": ["Wants to try {n} someday", "Would like to get into {n}"],
        "q": [
            "What {c} was I dying to try?",
            "Was {a} on my bucket list?",
            "Should I finally sign up for {n}, like I said?",
        ],
        "re": ["I really need to give {a} a go one day", "One of these days I'm trying {n}"],
    },
    "music": {
        "fact": ["Listens to a lot of {n}", "Favourite genre is {n}"],
        "q": [
            "Put on some tunes, you know my taste, right?",
            "Got any {a} recommendations for me?",
            "Is {n} still my thing?",
        ],
        "re": ["My playlist is basically all {a}", "Still can't stop listening to {n}"],
    },
    "allergy": {
        "fact": ["Is allergic to {n}", "Has an allergy to {n}"],
        "q": [
            "Anything I should avoid because of allergies?",
            "Can I have {a} or will I react?",
            "How bad is my reaction to {n}?",
        ],
        "re": ["{A} makes me break out in hives, as usual", "I'm still allergic to {n}, nothing has changed"],
    },
    "self_situation": {
        "fact": ["{n}"],
        "q": [
            "What's going on with my {c} lately, remember?",
            "How is {a} going for me, do you know?",
            "What did I tell you about my {c} situation?",
        ],
        "re": ["Still busy with {a}, it takes forever", "I told you about {a}, right? Still at it"],
    },
    "trip": {
        "fact": ["Plans to visit {n} in {m}", "Is going to {n} in {m}"],
        "q": [
            "When is my trip to {a} again?",
            "Where am I flying this {s}?",
            "Any tips for my {c} holiday?",
        ],
        "re": ["I booked the flights to {a} for {m}, so excited", "Still heading to {n} in {m}!"],
    },
    "buy": {
        "fact": ["Plans to buy {n}", "Is saving for {n}"],
        "q": [
            "What {c} was I going to get?",
            "Should I finally order {a}?",
            "Remind me why I wanted {n}?",
        ],
        "re": ["I keep looking at {a} online, I'll get one soon", "I still want {n}, it's on my list"],
    },
    "owns": {
        "fact": ["Owns {n}", "Bought {n} last year"],
        "q": [
            "Which {c} do I already have at home?",
            "Do I own {a} already?",
            "Should I replace {n}, or is mine still fine?",
        ],
        "re": ["I use {a} every day now", "Really glad I got {n}, it has been great"],
    },
    "job": {
        "fact": ["Works as a {n}", "Is a {n}"],
        "q": ["What do I do for a living again?", "Do I still work in {c}?", "Should I keep doing this, I mean, {a}?"],
        "re": ["Another long day at work, I {a} all day", "Being a {n} is exhausting some weeks"],
    },
    "lives": {
        "fact": ["{R} {p} lives in {n}", "{R} {p} is based in {n}"],
        "q": ["Where did {p} settle down again?", "Is my {ra} still over in {a}?", "Which {c} city is {p} in?"],
        "re": ["My {ra} {p} still lives over in {a}", "{p} is still in {n}, we video call a lot"],
    },
    "works": {
        "fact": ["{R} {p} works as a {n}", "{R} {p} is a {n}"],
        "q": ["What does {p} do for a living?", "Which {ra} of mine {a}?", "Is {p} still in {c}?"],
        "re": ["My {ra} {p} still {a}", "{p} is still working as a {n}"],
    },
    "person_hobby": {
        "fact": ["{R} {p} is really into {n}", "{R} {p} spends weekends on {n}"],
        "q": ["What does {p} do for fun?", "Who do I know that loves {a}?", "Which {c} is my {ra} into?"],
        "re": ["{p} roped me into {a} again", "My {ra} still spends every week on {n}"],
    },
    "person_situation": {
        "fact": ["{R} {p} {n}"],
        "q": ["Any {c} from {p} lately?", "Which {ra} of mine was dealing with {a}?", "How is {p} doing these days?"],
        "re": ["Big news about my {ra} {p}: {a}", "So {p} {n}, remember?"],
    },
    "birthday": {
        "fact": ["{R} {p}'s birthday is in {m}"],
        "q": ["When do I need a present for {p}?", "Whose birthday falls in {s}?", "Is my {ra}'s birthday coming up?"],
        "re": ["{p} turns a year older in {m}, need a gift", "Don't let me forget my {ra}'s birthday in {m}"],
    },
    "pet": {
        "fact": ["Has a {sp} named {pn}", "Owns a {sp} called {pn}"],
        "q": ["What's my {spa} called again?", "How's {pn} doing?", "Do I have a {c} at home?"],
        "re": ["My little {spa} {pn} knocked everything off the table again", "{pn} my {sp} says hi"],
    },
    "pet_age": {
        "fact": ["{pn} the {sp} is {yo}"],
        "q": ["How old is my {spa} now?", "What age is {pn}?", "When was {pn} born, roughly?"],
        "re": ["My {spa} just turned {y}", "{pn} is already {y}, time flies"],
    },
    "pet_health": {
        "fact": ["{pn} the {sp} has {n}", "{pn} the {sp} needs {n}"],
        "q": ["Is my {spa} okay, with the {a} and all?", "What's wrong with {pn} again?", "Any {c} news on my {spa}?"],
        "re": ["Took {pn} to the vet, it's the {a} again", "My {spa} {pn} still has {n}"],
    },
}
JA_T: T = {
    "food_like": {
        "fact": ["{n}が大好き", "{n}に目がない", "好物は{n}"],
        "q": [
            "お腹すいた、私が好きな{c}って何だっけ？",
            "{a}のおいしい店知ってる？好きなんだよね",
            "{n}って私の好物だったよね？",
        ],
        "re": ["やっぱり{a}が最高なんだよね", "昨日も{n}食べちゃった、本当に好き"],
    },
    "food_dislike": {
        "fact": ["{n}が苦手", "{n}は食べられない", "{n}が嫌い"],
        "q": [
            "私が食べられない{c}ってなんだっけ？",
            "飲み会で{a}が出るらしいけど、私大丈夫だっけ？",
            "{n}のどこが駄目なんだっけ、私",
        ],
        "re": ["{a}だけはどうしても無理", "この前{n}出されたけど、やっぱり駄目だった"],
    },
    "hobby": {
        "fact": ["{n}が趣味", "休みの日はよく{n}", "{n}を何年も続けている"],
        "q": [
            "週末に私がハマってる{c}って何だっけ？",
            "私って{a}やる人だったっけ？",
            "{n}を始めてからどのくらいだっけ？",
        ],
        "re": ["今週末も{a}してた、全然飽きない", "日曜はやっぱり{n}だね"],
    },
    "hobby_new": {
        "fact": ["最近{n}を始めた", "少し前から{n}を習い始めた"],
        "q": ["最近始めた{c}って何だったっけ？", "私、{a}に手を出したんだっけ？", "{n}って始めたばかりだったよね？"],
        "re": ["{a}はまだ初心者だけど楽しい", "{n}始めたばっかりで難しい！"],
    },
    "hobby_want": {
        "fact": ["いつか{n}をやってみたい", "{n}に挑戦したいと思っている"],
        "q": [
            "前にやりたいって言ってた{c}、何だっけ？",
            "{a}ってやりたいことリストに入ってた？",
            "{n}、そろそろ申し込もうかな？",
        ],
        "re": ["いつか絶対{a}やってみたいんだよね", "{n}、いつかやるつもり"],
    },
    "music": {
        "fact": ["{n}をよく聴く", "好きな音楽は{n}"],
        "q": ["何か曲かけて、私の好み分かるよね？", "{a}でおすすめある？", "最近も{n}聴いてたっけ？"],
        "re": ["プレイリストがほぼ{a}", "相変わらず{n}ばっかり聴いてる"],
    },
    "allergy": {
        "fact": ["{n}アレルギーがある", "{n}にアレルギーがある"],
        "q": [
            "アレルギーで避けた方がいいもの、何だっけ？",
            "{a}食べても平気だっけ？",
            "{n}って私、どのくらい反応出るんだっけ？",
        ],
        "re": ["{a}でまた蕁麻疹が出た", "{n}のアレルギーは相変わらず"],
    },
    "self_situation": {
        "fact": ["{n}"],
        "q": ["最近の私の{c}のこと、覚えてる？", "{a}の件、私どうなってたっけ？", "{c}について前に何て話したっけ？"],
        "re": ["まだ{a}で忙しい、全然終わらない", "前に話した{a}のこと、まだ続いてるよ"],
    },
    "trip": {
        "fact": ["{m}に{n}へ旅行する予定", "{m}に{n}に行くつもり"],
        "q": ["{a}に行くのっていつだったっけ？", "{s}の旅行、どこ行くんだっけ？", "{c}旅行のおすすめある？"],
        "re": ["{m}の{a}行き、飛行機取った！楽しみ", "{m}はやっぱり{n}に行くよ"],
    },
    "buy": {
        "fact": ["{n}を買うつもり", "{n}を買うために貯金している"],
        "q": [
            "私が買おうとしてた{c}って何だっけ？",
            "{a}、そろそろ注文しちゃおうかな？",
            "なんで{n}が欲しかったんだっけ？",
        ],
        "re": ["ネットで{a}ばっかり見てる、もうすぐ買う", "{n}、まだ欲しいものリストに入ってる"],
    },
    "owns": {
        "fact": ["{n}を持っている", "去年{n}を買った"],
        "q": ["家にある{c}って何だったっけ？", "私、{a}もう持ってたっけ？", "{n}、まだちゃんと動いてるかな？"],
        "re": ["毎日{a}使ってる", "{n}買ってよかった"],
    },
    "job": {
        "fact": ["{n}として働いている", "仕事は{n}"],
        "q": ["私の仕事って何だっけ？", "私ってまだ{c}の仕事してたっけ？", "{a}、このまま続けるべきかな？"],
        "re": ["今日も{a}で一日終わった", "{n}の仕事、今週はきつい"],
    },
    "lives": {
        "fact": ["{r}の{p}は{n}に住んでいる", "{r}の{p}は{n}在住"],
        "q": ["{p}って今どこに住んでるんだっけ？", "{ra}、まだ{a}暮らしだっけ？", "{p}がいるのって{c}のどこだっけ？"],
        "re": ["{ra}の{p}はまだ{a}にいるよ", "{p}は相変わらず{n}で暮らしてる"],
    },
    "works": {
        "fact": ["{r}の{p}は{n}として働いている", "{r}の{p}は{n}"],
        "q": ["{p}の仕事って何だっけ？", "{a}やってる身内って誰だっけ？", "{p}ってまだ{c}関係の仕事？"],
        "re": ["{ra}の{p}、今も{a}してる", "{p}は相変わらず{n}やってるよ"],
    },
    "person_hobby": {
        "fact": ["{r}の{p}は{n}が趣味", "{r}の{p}は{n}にハマっている"],
        "q": [
            "{p}が休みの日にやってることって何だっけ？",
            "{a}が好きな知り合い、誰だったっけ？",
            "{ra}の好きな{c}って何？",
        ],
        "re": ["{p}にまた{a}に連れて行かれた", "{ra}は今も毎週{n}してる"],
    },
    "person_situation": {
        "fact": ["{r}の{p}は{n}"],
        "q": ["{p}、{c}で何かあったんだっけ？", "{a}なのって誰だったっけ？", "最近{p}どうしてるかな？"],
        "re": ["{ra}の{p}、{a}なんだって", "{p}が{n}って話、覚えてる？"],
    },
    "birthday": {
        "fact": ["{r}の{p}の誕生日は{m}"],
        "q": [
            "{p}へのプレゼント、いつまでに用意すればいい？",
            "{s}生まれの知り合いって誰だっけ？",
            "{ra}の誕生日そろそろだっけ？",
        ],
        "re": ["{p}は{m}でまた一つ年を取る、何か贈らなきゃ", "{m}の{ra}の誕生日、忘れないようにしないと"],
    },
    "pet": {
        "fact": ["{sp}の{pn}を飼っている", "{pn}という{sp}を飼っている"],
        "q": ["うちの{spa}の名前、何だっけ？", "{pn}元気にしてるかな？", "私って{c}飼ってたっけ？"],
        "re": ["うちの{spa}の{pn}がまた机の上のものを全部落とした", "{pn}が今日も可愛い"],
    },
    "pet_age": {
        "fact": ["{sp}の{pn}は{y}歳"],
        "q": ["うちの{spa}って何歳になったっけ？", "{pn}っていくつだっけ？", "{pn}が生まれたのっていつ頃？"],
        "re": ["うちの{spa}、{y}歳になったよ", "{pn}ももう{y}歳か、早いな"],
    },
    "pet_health": {
        "fact": ["{sp}の{pn}は{n}", "{pn}（{sp}）は{n}"],
        "q": [
            "うちの{spa}、{a}の方は大丈夫かな？",
            "{pn}ってどこが悪いんだっけ？",
            "{spa}の{c}のこと、何か言ってたっけ？",
        ],
        "re": ["{pn}を動物病院に連れて行った、また{a}だって", "うちの{spa}の{pn}、相変わらず{n}"],
    },
}


@dataclass(frozen=True)
class Lang:
    code: str
    templates: T
    vocab: dict[str, list[V]]
    names: dict[str, list[str]]
    pet_names: list[str]
    months: list[tuple[str, str]]


LANGS = {
    "en": Lang(
        "en",
        EN_T,
        {
            "foods": EN_FOODS,
            "hobbies": EN_HOBBIES,
            "cities": EN_CITIES,
            "jobs": EN_JOBS,
            "relations": EN_RELATIONS,
            "situations": EN_SITUATIONS,
            "self_situations": EN_SELF_SITUATIONS,
            "items": EN_ITEMS,
            "genres": EN_GENRES,
            "allergies": EN_ALLERGIES,
            "species": EN_SPECIES,
            "pet_health": EN_PET_HEALTH,
        },
        EN_NAMES,
        EN_PET_NAMES,
        EN_MONTHS,
    ),
    "ja": Lang(
        "ja",
        JA_T,
        {
            "foods": JA_FOODS,
            "hobbies": JA_HOBBIES,
            "cities": JA_CITIES,
            "jobs": JA_JOBS,
            "relations": JA_RELATIONS,
            "situations": JA_SITUATIONS,
            "self_situations": JA_SELF_SITUATIONS,
            "items": JA_ITEMS,
            "genres": JA_GENRES,
            "allergies": JA_ALLERGIES,
            "species": JA_SPECIES,
            "pet_health": JA_PET_HEALTH,
        },
        JA_NAMES,
        JA_PET_NAMES,
        JA_MONTHS,
    ),
}

# ---------------------------------------------------------------- generation


@dataclass(frozen=True)
class Candidate:
    kind: str
    who: str  # "" for the person themselves, else the name of the person or pet it is about
    ctx: dict[str, Any]


def _candidates(lang: Lang, rng: random.Random, facts: int) -> list[Candidate]:
    """Every fact this person could have; the profile is a random sample of them."""
    v = lang.vocab
    out: list[Candidate] = []

    def item(x: V) -> dict[str, Any]:
        return {"n": x["n"], "a": x["a"], "c": x["c"]}

    for food in v["foods"]:
        out.append(Candidate(rng.choice(["food_like", "food_dislike"]), "", item(food)))
    for hobby in v["hobbies"]:
        out.append(Candidate(rng.choice(["hobby", "hobby_new", "hobby_want"]), "", item(hobby)))
    for genre in rng.sample(v["genres"], 4):
        out.append(Candidate("music", "", item(genre)))
    for allergy in rng.sample(v["allergies"], 3):
        out.append(Candidate("allergy", "", item(allergy)))
    for situation in v["self_situations"]:
        out.append(Candidate("self_situation", "", item(situation)))
    for city in v["cities"]:
        month, season = rng.choice(lang.months)
        out.append(Candidate("trip", "", {**item(city), "m": month, "s": season}))
    for thing in v["items"]:
        out.append(Candidate(rng.choice(["buy", "owns"]), "", item(thing)))
    out.append(Candidate("job", "", item(rng.choice(v["jobs"]))))
    for pet_name in rng.sample(lang.pet_names, rng.randint(1, 3)):
        species = rng.choice(v["species"])
        pet = {"pn": pet_name, "sp": species["n"], "spa": species["a"], "c": species["c"]}
        out.append(Candidate("pet", pet_name, pet))
        age = rng.randint(1, 15)
        out.append(
            Candidate("pet_age", pet_name, {**pet, "y": str(age), "yo": f"{age} year{'s' if age > 1 else ''} old"})
        )
        out.append(Candidate("pet_health", pet_name, {**pet, **item(rng.choice(v["pet_health"]))}))
    # The people in their life: enough of them that the profile can reach its size. A relation
    # flagged 1 (mother, partner, boss ...) is somebody's only one.
    cast = max(4, (facts * 11 // 10 - len(out)) // 5 + 1)
    names = {g: rng.sample(pool, len(pool)) for g, pool in lang.names.items()}
    relations = list(v["relations"])
    for _ in range(cast):
        relation = rng.choice(relations)
        if relation["c"].endswith("1"):
            relations.remove(relation)
        gender = relation["c"][0] if relation["c"][0] in names else rng.choice(sorted(names))
        if not names[gender]:
            break
        name = names[gender].pop()
        who = {"p": name, "r": relation["n"], "ra": relation["a"]}
        month, season = rng.choice(lang.months)
        out.append(Candidate("lives", name, {**who, **item(rng.choice(v["cities"]))}))
        out.append(Candidate("works", name, {**who, **item(rng.choice(v["jobs"]))}))
        out.append(Candidate("person_hobby", name, {**who, **item(rng.choice(v["hobbies"]))}))
        out.append(Candidate("person_situation", name, {**who, **item(rng.choice(v["situations"]))}))
        out.append(Candidate("birthday", name, {**who, "m": month, "s": season}))
    return out


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeioAEIO])")  # "a electrician" -> "an electrician" ("a used car" stays)


def _render(template: str, ctx: dict[str, Any], rng: random.Random) -> str:
    fields = {k: rng.choice(val) if isinstance(val, list) else val for k, val in ctx.items()}
    # Capitalised variants for a field at the start of an English sentence.
    fields.update({k.upper(): str(val)[:1].upper() + str(val)[1:] for k, val in list(fields.items())})
    text = _A_BEFORE_VOWEL.sub(r"\1n ", template.format(**fields))
    return text[:1].upper() + text[1:]


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def person(lang: Lang, index: int, size: int, rng: random.Random) -> dict[str, Any]:
    candidates = _candidates(lang, rng, size)
    chosen = rng.sample(candidates, min(size, len(candidates)))
    # Written over months: the fact ids follow the order they were written in.
    ages = sorted((rng.uniform(1 / 24, HISTORY_DAYS) for _ in chosen), reverse=True)
    facts = []
    for number, (candidate, age_days) in enumerate(zip(chosen, ages, strict=True), start=1):
        created = NOW - timedelta(days=age_days)
        updated = created
        if rng.random() < UPDATED_SHARE:
            updated = created + timedelta(days=rng.uniform(0, age_days - 1 / 48))
        template = rng.choice(lang.templates[candidate.kind]["fact"])
        facts.append(
            {
                "id": f"f{number:03d}",
                "kind": candidate.kind,
                "about": candidate.who,
                "text": _render(template, candidate.ctx, rng),
                "created_at": _iso(created),
                "updated_at": _iso(updated),
            }
        )
    by_id = {f["id"]: c for f, c in zip(facts, chosen, strict=True)}
    questions = []
    # Most questions are about one fact (uniformly chosen, so usually an old one); one in six asks
    # after a person or pet as a whole ("how is X doing"): every fact about them is evidence.
    for number, fact in enumerate(rng.sample(facts, QUESTIONS), start=1):
        candidate = by_id[fact["id"]]
        about = [f["id"] for f in facts if candidate.who and f["about"] == candidate.who]
        if len(about) >= 2 and rng.random() < 1 / 6:
            text = {"en": f"What's the latest with {candidate.who}?", "ja": f"{candidate.who}の近況ってどうだっけ？"}
            questions.append({"id": f"q{number:02d}", "text": text[lang.code], "evidence": about})
            continue
        template = rng.choice(lang.templates[candidate.kind]["q"])
        questions.append(
            {"id": f"q{number:02d}", "text": _render(template, candidate.ctx, rng), "evidence": [fact["id"]]}
        )
    re_mentions = []
    for number, fact in enumerate(rng.sample(facts, RE_MENTIONS), start=1):
        template = rng.choice(lang.templates[fact["kind"]]["re"])
        re_mentions.append(
            {"id": f"r{number:02d}", "text": _render(template, by_id[fact["id"]].ctx, rng), "fact": fact["id"]}
        )
    return {
        "person": f"{lang.code}-{index:02d}",
        "lang": lang.code,
        "now": _iso(NOW),
        "facts": facts,
        "questions": questions,
        "re_mentions": re_mentions,
    }


def generate(code: str, seed: int = SEED) -> str:
    """The JSONL text of one language's profiles (one person a line)."""
    lang = LANGS[code]
    rng = random.Random(f"{seed}-{code}")
    sizes = [MIN_FACTS + round(i * (MAX_FACTS - MIN_FACTS) / (PEOPLE - 1)) for i in range(PEOPLE)]
    lines = [
        json.dumps(person(lang, i + 1, size, rng), ensure_ascii=False, sort_keys=True) for i, size in enumerate(sizes)
    ]
    return "\n".join(lines) + "\n"


def data_path(code: str) -> Path:
    return DATA_DIR / f"profiles_{code}.jsonl"


def main() -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for code in LANGS:
        text = generate(code)
        data_path(code).write_text(text, encoding="utf-8")
        people = [json.loads(line) for line in text.splitlines()]
        facts = sum(len(p["facts"]) for p in people)
        print(f"{data_path(code).name}: {len(people)} people, {facts} facts, {len(text.encode()) // 1024} KiB")


if __name__ == "__main__":
    main()
