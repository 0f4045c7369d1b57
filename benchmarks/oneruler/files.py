"""The files of ONERULER's data, as upstream's generator reads them: GitHub mungg/OneRuler at the
pinned commit, folder `OneRuler/data/`, each with its sha256 (the `oneruler` source of
`catalog.sources`).

`ruler sources fetch oneruler` downloads each file from raw.githubusercontent.com at the pinned
commit, capped at its size (`SIZES`), and installs the folder only when every sha256 matches.
What is not listed is never read by the generator (upstream's `.DS_Store` files and the
dictionaries' `.txt` copies).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

#: The commit every file is read at (2025-03-24, "Update README.md").
COMMIT = "a3fe6af862dc4b30794afc0a8f3d4f60758cecfa"
#: Where the files are: <RAW_BASE><path>, the path URL-quoted.
RAW_BASE = f"https://raw.githubusercontent.com/mungg/OneRuler/{COMMIT}/OneRuler/data/"

#: Path below OneRuler/data/ -> sha256: 26 books, 52 prompt files, the translated noun list and
#: 25 dictionaries.
FILES: Mapping[str, str] = MappingProxyType({
    "books/cs/the_good_soldier_schweik_3_the_glorious_licking_cs.txt":
        "5600d10fdb502ea2cd537575fb10a45a781bd715a393c2ab3b53bb79e3687b71",
    "books/da/elderflower_and_hops_tales_sophie_breum_da.txt":
        "fba4f1e19dcaa139e0bfb43be9c322522384124473093bfa38d802d3dcece372",
    "books/de/the_magic_mountain_de.txt":
        "9ee5dff738d117158fbc4a2f09412aa68ff63a8433d21729809baa6c508e5019",
    "books/en/little_women_louisa_may_alcott.txt":
        "2f3bf7071cbc1151db8a933ad179b66410bf7035d936d22cc72a8e2622182f43",
    "books/es/don_quixote_es.txt":
        "28cd4f318ff632f03ffde026129834bddd5029a5bab4b488be00680a5254c659",
    "books/fa/the_blind_owl_fa.txt":
        "96f7adf61d05e921e6f975a481bb624b61bd8dcdc95884fc6012520a2388e589",
    "books/fi/sylvi_minna_canth_fi.txt":
        "ff5042e2aebf8291402b1c024949867ee3a40d57f325bb2bfc145897f4bc60e4",
    "books/fr/les_miserables_fr.txt":
        "61ea68ac4f11ec9f5d76fbaf7c8ec866274cbc7441b4bc63a513623fc8d7c2d9",
    "books/hi/chandrakarta_hi.txt":
        "146eb47dd7f58533c522efb245c6d36da37283dd7f6468b5a2771aade39942c8",
    "books/hu/king_midas_vol1_zoltan_ambrus_hu.txt":
        "9d33566db1faf7797f587c0b3c899544214dc911e57969ef10432919624f5d50",
    "books/it/the_mate_mattia_pascal_it.txt":
        "4b837489b219eb8243e77a9e98d76e39e1452c5f837a7b7322ca42ce90e5ae5b",
    "books/ja/kokoro_ja.txt": "5146aaaac0efa12b56c53f7f2c808307a121e38646987d79a1f3d97b8ee40d4f",
    "books/ko/boys_sorrow_yi_kwangsu_ko.txt":
        "191a739121d598a8618e49902b77b600bc6ed41ff752269a2a91ea3a7b8eb337",
    "books/nl/the_diary_of_a_young_girl_nl.txt":
        "a64fe388186b52d0a67fa6af50ea2022d06942607ffcc3b5439566eed38f4b41",
    "books/no/kristin_lavransdatter_2_the_wife_no.txt":
        "40edda0f9a6a4ae89a814004be27443c6237887c70114b2cd5b162f046ea4076",
    "books/pl/nights_and_days_vol3_maria_dambrowska_pl.txt":
        "f5557988122fc198d8be32ca34310ea51c9ef9cebac76c6a169dda9b0aa37284",
    "books/pt/the_book_of_disquietude_pt.txt":
        "45c4d6706e671287f47f9161e8e6ec43559d7453c3c932658b97adede7ded6f3",
    "books/ru/war_and_peace_ru.txt":
        "6a51a0a993ebeda6dea213731365627c12f08a02a32381502466b1bb7ad4d4bd",
    "books/sr/seconds_of_eternity_an_estern_novel_dragutin_ilić_sr.txt":
        "5ea561b7a58c9b04283d2930454373923684a94c478c2abc5c079c3865a6317d",
    "books/st/chaka_st.txt": "3f228c74d8b20b24658f285acf2250058d2088bd9fb93aeca784d10262049da2",
    "books/sv/the_story_of_gosta_berling_sv.txt":
        "97f319842e23e6aa31639641ea3d23cde1efae1c17a2236223c7e339e121c373",
    "books/sw/my_life_fifty_years_after_shaaban_robert_sw_NEED_CLEANING.txt":
        "54e3cefa4fe7e60d9ba9d2212d69881924a2f8452f9d44bf100db0578ba0aa52",
    "books/ta/ponniyin_selvan_1_the_first_floods_ta.txt":
        "546ae157163d470f3e39d6dc0dcb07538cf3f54b6d41a08bbc8a00e7ddce80aa",
    "books/uk/instytutka_marko_vovchok_uk.txt":
        "881b098892b97bfcef4f83810c90967d36be03bff47fe7758aaf21b4b07b326b",
    "books/vi/pure_heart_ngoc_phachHoang_vi.txt":
        "7a1e352123de670a71a0e6b4f1af6979f7bfffe1aa7c9840ca5f68194e0b2fbe",
    "books/zh/call_to_arms_zh.txt":
        "ca8e86f7e9e46d4d9a1d1c9188a6c9a1c32f1c52d54d1fd12ea96ca1285a3e32",
    "prompt/cs/cwe.txt": "ef7dd92de14233d176cfff1618759d63b8a4a54cdfb96015c85fb149a339c082",
    "prompt/cs/niah.txt": "a22e9fd7b4e39d4f85402e2d89464ef08899c7ef928895c2749da25888ae4542",
    "prompt/da/cwe.txt": "0fd759e748bb652bd836ce11bd24a7b2f13aabb5ed1d7b3aa09b1ab8ac839b1c",
    "prompt/da/niah.txt": "e81a84f760702eb4038ff94872ca01c9d5d10c18f4a0ef271a98b36cc60a5378",
    "prompt/de/cwe.txt": "3718b6692294d91def8c92310a5469514538acecfa93d4488d7d7cd78732e636",
    "prompt/de/niah.txt": "1d9a86cbd036d39380da136bca353539436f7f6ba69080eaff8e5bdce87d0b89",
    "prompt/en/cwe.txt": "a25fdf6f27d0fe00dd4f65efb4bf9070c257c81a29392d81c9643e7d4a61fea3",
    "prompt/en/niah.txt": "478a3b5973b3cbf90c45b5f80f7398f09fc3c00e037ad6826177e72d947e4f7e",
    "prompt/es/cwe.txt": "942f727add593d3f58e97f17e529e594c66cb3cbfda3b039e180fdd872560328",
    "prompt/es/niah.txt": "0196d0b5c4bc3103d97e374ecb52177fab5647c6612e8b51715c5d8aea7f2816",
    "prompt/fa/cwe.txt": "5c2dc2d7da2faf4b2c836cd5947e25221db9f79660cd285f1f7c1b115f91e2e0",
    "prompt/fa/niah.txt": "140e56da62a9d57831a4b9270e7290e14929ca5a9bb5ff130c4469a6a78dcf78",
    "prompt/fi/cwe.txt": "85007069481edd0ed020cfc71de2a8b1e9f809e2dfde15220260adc69f6620a7",
    "prompt/fi/niah.txt": "fac2c6c981ef1210067fff39077c193e3e8bd97194ffa8354b42f405b9992dc1",
    "prompt/fr/cwe.txt": "dc74806ffde8d0203245fb88954117ffeaec4175da12954b13e308226eb7dda8",
    "prompt/fr/niah.txt": "ad1a21dc5ce1c10d41cc9a825744e61e7fb639cc55acfd401d152c9a9a8972d7",
    "prompt/hi/cwe.txt": "3a7a5d9bf0a8195366231bdb9df5d5597777034e32a4c9816b735f8a27cba568",
    "prompt/hi/niah.txt": "f98cad27782387c0e18f64ba30b3ae1fa6a072798741b296e386f5d48ae3c784",
    "prompt/hu/cwe.txt": "98625ec8512d296164c3cc51847ee30e36146782430907a3f1ae995542214584",
    "prompt/hu/niah.txt": "85bd72ff618ef821fb5733388d0b4a6f5aab90fa6096a97d3786cee9e2ff1bb0",
    "prompt/it/cwe.txt": "95acadd93fe586fb2cb94679561dd545faf4e8c6aca6d5107a182b096c9dbbf7",
    "prompt/it/niah.txt": "674c685d1d5a2abacf8a2c51f45df525a4b0f03051e28c97413689b272290c92",
    "prompt/ja/cwe.txt": "83cebc7f2d931b0f92098ec47a214f584b38b4c46bf9cade1777117b4a9db856",
    "prompt/ja/niah.txt": "8882785af699984022ad1d58285fd5cd002aa1a4ed7c592124c8641b35cdf4b9",
    "prompt/ko/cwe.txt": "99d9b6e2fbb254cb5ab717bf37d7b0ee7994aec393593817a4b945f6b65a379a",
    "prompt/ko/niah.txt": "c810620ff3fbdfe34aeacf443abc8ad00ff49adf87d27fb88e04e40b212a06de",
    "prompt/nl/cwe.txt": "a74d50676b85e50919a26820452f86200bed0b1649cd0c25e13bc36787473e82",
    "prompt/nl/niah.txt": "fc2bb5356335322c1f37bab12f98927a2c98c114b042982338e866ea58e1d646",
    "prompt/no/cwe.txt": "b205584bf4fc89d33994c1ff4ea346614a4bc9f0cf84fbbb2a4d576a2d9a5746",
    "prompt/no/niah.txt": "a9d1141acef07d75eb7e4e996f1acf7dfad6978f60e62a70153efbfc29ea1171",
    "prompt/pl/cwe.txt": "32b534fec1295e210a510a9ea7d26e6a5afeec46dc1f31906074c04f83c08748",
    "prompt/pl/niah.txt": "12e6f85602d625983fd15578f3404eec7b810005d2f224b4b7f7d4d971dbe6ab",
    "prompt/pt/cwe.txt": "2152f22e2d454ba642c27f7f137a8cf52ff0247565543fc94472663cbbd330f5",
    "prompt/pt/niah.txt": "8360092a675bc032a222ee1537b1d25d74a5f94318a68ef9bb70c4cd341b6e5d",
    "prompt/ru/cwe.txt": "a56e868c0393262f0fb4ddff223689d5815858d49c3f40b1c927bae846a744f8",
    "prompt/ru/niah.txt": "f45f5898690b1c5d174dd23e896be31a17cba3fc84f75d997949c0f969339794",
    "prompt/sr/cwe.txt": "00fb96924394da5f66cf0d490f3784629bb1445a5f32fb943990955e21b88240",
    "prompt/sr/niah.txt": "a003a64d2982f5494552bd1ae1df08f0c242e5aeac4035e698c2a45159270f9a",
    "prompt/st/cwe.txt": "4e3d46a9998962a2f39330def722f9600f366b87e6b315bc69fc69b23d907710",
    "prompt/st/niah.txt": "b26b556e8ce3582d0d0021f0ca7d5365817da19bd48498cfc6a22aadd14a75ab",
    "prompt/sv/cwe.txt": "3b5c9a4b85114e3c1d94568c8966f245331290f188cb0198de627aaca35ef97f",
    "prompt/sv/niah.txt": "399f021543d0f44a0ffc65153953c92d182002706b101735ec0e392fe067c052",
    "prompt/sw/cwe.txt": "7aad2bfa03db3010d7f2cdf0a29d4602fa04f824f23af617a73f2c3841c2ef0e",
    "prompt/sw/niah.txt": "e27b4c504a1824a4451406cd5ba4cebf7a22d9f483573fc90513aec535060277",
    "prompt/ta/cwe.txt": "bb870e2a51918d6dfe70cf10ad1f17bd606d65a876bdfadc929129f98761137f",
    "prompt/ta/niah.txt": "2e608f3b42880b0ddc61f6e72189605652e0d462968801c43e1df0ac8f7ea023",
    "prompt/uk/cwe.txt": "a9d0e663cb8032585937850039ae5347e214aea49dc55722ff6d43960feaf7fe",
    "prompt/uk/niah.txt": "614d6b8a53568fe4cd44d0211fd3a266b3e2826969c21d5946642f0e9dbfa1f5",
    "prompt/vi/cwe.txt": "6418b1167ef4e02b7ee8504de13b4b38a3764352de428ab37368b88ebb88b87a",
    "prompt/vi/niah.txt": "7274140ad041958e3d3071dddb454ef90913b85b536a3787cfb9bf58eaa4bf83",
    "prompt/zh/cwe.txt": "73544e0f21c63a1b116cd6d5ee9e2aae3f917bcf2656fd0a0e85c99385c0e1aa",
    "prompt/zh/niah.txt": "f2b85fc87ae376970c953383a62a54dfacb3717ea3e75859095c012176fb7ef0",
    "vocab/100_noun_list_translated.tsv":
        "c2938f218054a8d80b7048d70bb9140647ac448b4fc1f0735633d5479d785dba",
    "vocab/dictionaries/Chinese/Chinese.csv":
        "38a2cdb84d369b0dd2aac5fe178bd4857b0e53ef65af3a0fb6b945c8b66effb0",
    "vocab/dictionaries/Czech/Czech.csv":
        "b6d7b4e124cd7ba7b4c8317a036f2b2919d4712e2650c85e25883ebe44d5c4ca",
    "vocab/dictionaries/Danish/Danish.csv":
        "81bb843fd0d311433774d1597f46dd124cec7b53046664acb37cb3b0126a1358",
    "vocab/dictionaries/Dutch/Dutch.csv":
        "9a1f44c8623532065479ce224a95b6112785b247972929fcff2fa1d160db5f37",
    "vocab/dictionaries/Finnish/Finnish.csv":
        "dd3213313527101aaedcd8416ee493d2182e0659e4964cc49375d23a18ad1871",
    "vocab/dictionaries/French/French.csv":
        "1e2123fe7237606ed623867ec952d4d39f881b150550d5dfa3557e01b7f62985",
    "vocab/dictionaries/German/German.csv":
        "ad73cbb71f1e0ddbda7bff48a784d091f806308734e7f6020e849311c980beff",
    "vocab/dictionaries/Hindi/Hindi.csv":
        "36cbdca052423314c20e50ebbafdb1c09b585f9aef36c042789f099aa6dd61a1",
    "vocab/dictionaries/Hungarian/Hungarian.csv":
        "bde5ec02be9fb16138e632fbdb9894ebee22ae52f8f028d83b04d35bcea615de",
    "vocab/dictionaries/Italian/Italian.csv":
        "0ed480d939ce22f578b67928da3b0e01225d340241c571557b78b220a2b4bfd4",
    "vocab/dictionaries/Japanese/Japanese.csv":
        "c3221398d44dec9ac09ac2794d3b42c08b7e7d67aaf0f80269bdca14735a32d2",
    "vocab/dictionaries/Korean/Korean.csv":
        "c1a94463372042f82ce8e1e411c5c633db51a81c4171e8655982768bd4d51fa3",
    "vocab/dictionaries/Norwegian/Norwegian.csv":
        "a0b4ac973235b9e41e0f4566ed194231ba598324caa356ec52c7b584be27ac61",
    "vocab/dictionaries/Persian/Persian.csv":
        "ea53e0cc864d6d9c99263f1403b29bd1444fcf2af3b6c72fe0f5302b82595fb6",
    "vocab/dictionaries/Polish/Polish.csv":
        "0eabcb1c459a2be8acee4b7a69791f50618fa9f57b05e3614a74bd212e3dbf36",
    "vocab/dictionaries/Portuguese/Portuguese.csv":
        "d0a109395322bd5610f3fc10504361049660b729eb81edc58fffe97dc7524b7a",
    "vocab/dictionaries/Russian/Russian.csv":
        "b2c5a9c7c361daa192fa2f600a459246e7d189c50f8650ef5061e6cbcc3a4cc9",
    "vocab/dictionaries/Serbian/Serbian.csv":
        "e2057481220f9a6be6efcafbf965de524800042f991a0ae62c35386855c39312",
    "vocab/dictionaries/Sesotho/Sesotho.csv":
        "cab4e4f345dd14f782f2a953098e30f636cc510477937247aade4a13d4da09ac",
    "vocab/dictionaries/Spanish/Spanish.csv":
        "95f7989ae932a29ddfb0a8e4d28e79d2b1d2dfd7a2d6f3b81860c5eb3f8a9015",
    "vocab/dictionaries/Swahili/Swahili.csv":
        "d789a0e07fbfd8a7ff02c9698bd2a1e22cb17908cd0ac716d2612b78a6bb5168",
    "vocab/dictionaries/Swedish/Swedish.csv":
        "9af625581a979a31aa4cf189dec0c1e863c8d3617cbac34bdd7bf11cc4b76b43",
    "vocab/dictionaries/Tamil/Tamil.csv":
        "96d2c14466db97a4b71603ec2f1d3c2bcefa299a2156412606925cdd8dc55368",
    "vocab/dictionaries/Ukrainian/Ukrainian.csv":
        "5f8b2f9f553af4f7fa57cc4d37cf08a5790b0731575471da8af23bc28151d89f",
    "vocab/dictionaries/Vietnamese/Vietnamese.csv":
        "8d19ab66b9259be5cf3356d78010b0b405274ed833d5507c787455e4960907fd",
})

#: Path below OneRuler/data/ -> its size in bytes at the pinned commit: each download is
#: capped at it (a server sending more is refused at once).
SIZES: Mapping[str, int] = MappingProxyType({
    "books/cs/the_good_soldier_schweik_3_the_glorious_licking_cs.txt": 421395,
    "books/da/elderflower_and_hops_tales_sophie_breum_da.txt": 220575,
    "books/de/the_magic_mountain_de.txt": 2073581,
    "books/en/little_women_louisa_may_alcott.txt": 1029159,
    "books/es/don_quixote_es.txt": 2126350,
    "books/fa/the_blind_owl_fa.txt": 191594,
    "books/fi/sylvi_minna_canth_fi.txt": 154970,
    "books/fr/les_miserables_fr.txt": 3286204,
    "books/hi/chandrakarta_hi.txt": 2055206,
    "books/hu/king_midas_vol1_zoltan_ambrus_hu.txt": 589174,
    "books/it/the_mate_mattia_pascal_it.txt": 454899,
    "books/ja/kokoro_ja.txt": 519626,
    "books/ko/boys_sorrow_yi_kwangsu_ko.txt": 30009,
    "books/nl/the_diary_of_a_young_girl_nl.txt": 445037,
    "books/no/kristin_lavransdatter_2_the_wife_no.txt": 793926,
    "books/pl/nights_and_days_vol3_maria_dambrowska_pl.txt": 1262553,
    "books/pt/the_book_of_disquietude_pt.txt": 847964,
    "books/ru/war_and_peace_ru.txt": 4061715,
    "books/sr/seconds_of_eternity_an_estern_novel_dragutin_ilić_sr.txt": 131630,
    "books/st/chaka_st.txt": 302626,
    "books/sv/the_story_of_gosta_berling_sv.txt": 769612,
    "books/sw/my_life_fifty_years_after_shaaban_robert_sw_NEED_CLEANING.txt": 170879,
    "books/ta/ponniyin_selvan_1_the_first_floods_ta.txt": 1857170,
    "books/uk/instytutka_marko_vovchok_uk.txt": 119473,
    "books/vi/pure_heart_ngoc_phachHoang_vi.txt": 185188,
    "books/zh/call_to_arms_zh.txt": 201616,
    "prompt/cs/cwe.txt": 364,
    "prompt/cs/niah.txt": 1368,
    "prompt/da/cwe.txt": 294,
    "prompt/da/niah.txt": 1153,
    "prompt/de/cwe.txt": 372,
    "prompt/de/niah.txt": 1471,
    "prompt/en/cwe.txt": 325,
    "prompt/en/niah.txt": 1243,
    "prompt/es/cwe.txt": 408,
    "prompt/es/niah.txt": 1409,
    "prompt/fa/cwe.txt": 538,
    "prompt/fa/niah.txt": 1749,
    "prompt/fi/cwe.txt": 349,
    "prompt/fi/niah.txt": 1337,
    "prompt/fr/cwe.txt": 379,
    "prompt/fr/niah.txt": 1374,
    "prompt/hi/cwe.txt": 845,
    "prompt/hi/niah.txt": 2647,
    "prompt/hu/cwe.txt": 368,
    "prompt/hu/niah.txt": 1486,
    "prompt/it/cwe.txt": 315,
    "prompt/it/niah.txt": 1198,
    "prompt/ja/cwe.txt": 458,
    "prompt/ja/niah.txt": 1466,
    "prompt/ko/cwe.txt": 434,
    "prompt/ko/niah.txt": 1519,
    "prompt/nl/cwe.txt": 365,
    "prompt/nl/niah.txt": 1359,
    "prompt/no/cwe.txt": 308,
    "prompt/no/niah.txt": 1262,
    "prompt/pl/cwe.txt": 424,
    "prompt/pl/niah.txt": 1460,
    "prompt/pt/cwe.txt": 372,
    "prompt/pt/niah.txt": 1356,
    "prompt/ru/cwe.txt": 599,
    "prompt/ru/niah.txt": 2016,
    "prompt/sr/cwe.txt": 327,
    "prompt/sr/niah.txt": 1232,
    "prompt/st/cwe.txt": 378,
    "prompt/st/niah.txt": 1400,
    "prompt/sv/cwe.txt": 305,
    "prompt/sv/niah.txt": 1261,
    "prompt/sw/cwe.txt": 385,
    "prompt/sw/niah.txt": 1336,
    "prompt/ta/cwe.txt": 902,
    "prompt/ta/niah.txt": 3033,
    "prompt/uk/cwe.txt": 609,
    "prompt/uk/niah.txt": 2015,
    "prompt/vi/cwe.txt": 598,
    "prompt/vi/niah.txt": 1653,
    "prompt/zh/cwe.txt": 348,
    "prompt/zh/niah.txt": 1198,
    "vocab/100_noun_list_translated.tsv": 26698,
    "vocab/dictionaries/Chinese/Chinese.csv": 184964,
    "vocab/dictionaries/Czech/Czech.csv": 185289,
    "vocab/dictionaries/Danish/Danish.csv": 198966,
    "vocab/dictionaries/Dutch/Dutch.csv": 178073,
    "vocab/dictionaries/Finnish/Finnish.csv": 188240,
    "vocab/dictionaries/French/French.csv": 187146,
    "vocab/dictionaries/German/German.csv": 226010,
    "vocab/dictionaries/Hindi/Hindi.csv": 291478,
    "vocab/dictionaries/Hungarian/Hungarian.csv": 164416,
    "vocab/dictionaries/Italian/Italian.csv": 184897,
    "vocab/dictionaries/Japanese/Japanese.csv": 122787,
    "vocab/dictionaries/Korean/Korean.csv": 98919,
    "vocab/dictionaries/Norwegian/Norwegian.csv": 182731,
    "vocab/dictionaries/Persian/Persian.csv": 203094,
    "vocab/dictionaries/Polish/Polish.csv": 157888,
    "vocab/dictionaries/Portuguese/Portuguese.csv": 170109,
    "vocab/dictionaries/Russian/Russian.csv": 276820,
    "vocab/dictionaries/Serbian/Serbian.csv": 280389,
    "vocab/dictionaries/Sesotho/Sesotho.csv": 35473,
    "vocab/dictionaries/Spanish/Spanish.csv": 180667,
    "vocab/dictionaries/Swahili/Swahili.csv": 37447,
    "vocab/dictionaries/Swedish/Swedish.csv": 198651,
    "vocab/dictionaries/Tamil/Tamil.csv": 98009,
    "vocab/dictionaries/Ukrainian/Ukrainian.csv": 282513,
    "vocab/dictionaries/Vietnamese/Vietnamese.csv": 201909,
})
