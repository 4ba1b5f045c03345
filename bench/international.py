"""Deterministic customer records of many languages and scripts: names,
emails, cities, phones, as a database export holds them. Used by
bench/make_corpus.py (database results: `str(rows)` of SQLite, DuckDB's
escaped JSON), bench/make_estimator_corpus.py (the token estimator's
calibration) and the budget tests (a 2.3 MB international export cut to a
token budget: tests/estimator.rs, tests/e2e/test_budget.py).

The name and city lists are common first names, family names and cities
of each language, written as natives write them (Latin with diacritics,
Cyrillic, Greek, Vietnamese, Arabic, Hebrew, Devanagari, Thai, CJK,
Hangul); emails are their ASCII transliterations, as mail systems hold
them.

Run: python3 bench/international.py --rows N [--seed S] [--langs pl,is,vi]
(prints the rows as compact JSON)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import unicodedata

# language: (first names, family names, cities, country, mail domain,
# romanized first names, romanized family names) — the romanized lists only
# where the script is not Latin.
LANGS: dict[str, tuple] = {
    "pl": (
        ["Łukasz", "Małgorzata", "Wojciech", "Zofia", "Grzegorz", "Agnieszka", "Krzysztof", "Józef", "Bożena", "Jędrzej", "Ewa", "Paweł"],
        ["Kowalski", "Wiśniewska", "Wójcik", "Kamińska", "Lewandowski", "Zieliński", "Szymańska", "Woźniak", "Dąbrowski", "Kozłowska", "Jankowski", "Mazur"],
        ["Kraków", "Łódź", "Wrocław", "Gdańsk", "Poznań", "Szczecin", "Bydgoszcz", "Białystok", "Częstochowa", "Rzeszów"],
        "PL", "example.pl", None, None,
    ),
    "is": (
        ["Guðrún", "Sigurður", "Þórunn", "Jón", "Ólafur", "Ásdís", "Guðmundur", "Hólmfríður", "Kristín", "Einar", "Þórður", "Sólveig"],
        ["Jónsdóttir", "Sigurðsson", "Guðmundsdóttir", "Ólafsson", "Þorsteinsson", "Björnsdóttir", "Einarsson", "Magnúsdóttir", "Kristjánsson", "Halldórsdóttir"],
        ["Reykjavík", "Kópavogur", "Hafnarfjörður", "Akureyri", "Garðabær", "Mosfellsbær", "Árborg", "Akranes", "Fjarðabyggð", "Ísafjörður"],
        "IS", "example.is", None, None,
    ),
    "vi": (
        ["Nguyễn Văn", "Trần Thị", "Lê Hoàng", "Phạm Minh", "Hoàng Thị", "Huỳnh Đức", "Phan Thanh", "Vũ Ngọc", "Đặng Quốc", "Bùi Thị"],
        ["Anh", "Hương", "Dũng", "Thảo", "Tuấn", "Phượng", "Hiếu", "Trường", "Quỳnh", "Khánh"],
        ["Hà Nội", "Thành phố Hồ Chí Minh", "Đà Nẵng", "Hải Phòng", "Cần Thơ", "Huế", "Nha Trang", "Biên Hòa", "Vũng Tàu", "Quy Nhơn"],
        "VN", "example.vn", None, None,
    ),
    "de": (
        ["Jürgen", "Käthe", "Björn", "Günther", "Lena", "Jörg", "Uwe", "Sören", "Ilse", "Maximilian"],
        ["Müller", "Schröder", "Weiß", "Größer", "Köhler", "Schäfer", "Krüger", "Hoffmann", "Straßburger", "Bäcker"],
        ["München", "Köln", "Düsseldorf", "Nürnberg", "Lübeck", "Göttingen", "Saarbrücken", "Würzburg", "Osnabrück", "Tübingen"],
        "DE", "example.de", None, None,
    ),
    "fr": (
        ["Amélie", "François", "Hélène", "Jérôme", "Loïc", "Céline", "Gaëlle", "Noël", "Renée", "Thérèse"],
        ["Lefèvre", "Bérubé", "Moreau", "Girard", "Dubois", "Mercier", "Lévêque", "Rousseau", "Château", "Besançon"],
        ["Besançon", "Nîmes", "Orléans", "Créteil", "Saint-Étienne", "Angoulême", "Montréal", "Valençay", "Évreux", "Pérouges"],
        "FR", "example.fr", None, None,
    ),
    "es": (
        ["José", "María", "Ángel", "Lucía", "Begoña", "Iñaki", "Sofía", "Andrés", "Inés", "Raúl"],
        ["García", "Fernández", "Martínez", "Sánchez", "Gómez", "Muñoz", "Jiménez", "Peña", "Ibáñez", "Núñez"],
        ["Málaga", "Córdoba", "León", "Cádiz", "Logroño", "Ávila", "Bogotá", "Cartagena", "San Sebastián", "Alcalá de Henares"],
        "ES", "example.es", None, None,
    ),
    "cs": (
        ["Jiří", "Tomáš", "Kateřina", "Lucie", "Petr", "Zdeněk", "Markéta", "Věra", "Radek", "Šárka"],
        ["Novák", "Dvořák", "Černý", "Procházková", "Kučera", "Veselý", "Horák", "Němcová", "Pokorný", "Růžička"],
        ["Praha", "Brno", "Ostrava", "Plzeň", "Liberec", "Olomouc", "České Budějovice", "Hradec Králové", "Ústí nad Labem", "Pardubice"],
        "CZ", "example.cz", None, None,
    ),
    "tr": (
        ["Çağla", "Gökhan", "Şükrü", "Ayşe", "Özlem", "İbrahim", "Ümit", "Gülşen", "Barış", "Ebru"],
        ["Yılmaz", "Kaya", "Demir", "Şahin", "Çelik", "Yıldız", "Öztürk", "Aydın", "Özdemir", "Arslan"],
        ["İstanbul", "Ankara", "İzmir", "Eskişehir", "Şanlıurfa", "Muğla", "Diyarbakır", "Kütahya", "Çanakkale", "Gaziantep"],
        "TR", "example.com.tr", None, None,
    ),
    "hu": (
        ["Gergő", "Zsófia", "Bálint", "Réka", "Ödön", "Enikő", "Tünde", "Lőrinc", "Ágnes", "Csongor"],
        ["Nagy", "Kovács", "Tóth", "Szabó", "Horváth", "Varga", "Kiss", "Molnár", "Németh", "Fekete"],
        ["Budapest", "Debrecen", "Szeged", "Miskolc", "Pécs", "Győr", "Nyíregyháza", "Kecskemét", "Székesfehérvár", "Szombathely"],
        "HU", "example.hu", None, None,
    ),
    "ro": (
        ["Ștefan", "Ioana", "Mihai", "Alexandra", "Răzvan", "Bianca", "Tudor", "Andreea", "Cătălin", "Oana"],
        ["Popescu", "Ionescu", "Dumitrescu", "Stănescu", "Georgescu", "Căpraru", "Munteanu", "Țăranu", "Florea", "Bălan"],
        ["București", "Cluj-Napoca", "Timișoara", "Iași", "Constanța", "Brașov", "Galați", "Ploiești", "Oradea", "Târgu Mureș"],
        "RO", "example.ro", None, None,
    ),
    "ru": (
        ["Александр", "Екатерина", "Дмитрий", "Ольга", "Сергей", "Наталья", "Михаил", "Юлия", "Андрей", "Татьяна"],
        ["Иванов", "Смирнова", "Кузнецов", "Попова", "Васильев", "Петрова", "Соколов", "Михайлова", "Новиков", "Фёдорова"],
        ["Москва", "Санкт-Петербург", "Новосибирск", "Екатеринбург", "Казань", "Нижний Новгород", "Челябинск", "Самара", "Омск", "Ростов-на-Дону"],
        "RU", "example.ru",
        ["aleksandr", "ekaterina", "dmitrij", "olga", "sergej", "natalja", "mihail", "julija", "andrej", "tatjana"],
        ["ivanov", "smirnova", "kuznecov", "popova", "vasiljev", "petrova", "sokolov", "mihajlova", "novikov", "fedorova"],
    ),
    "uk": (
        ["Олександр", "Оксана", "Андрій", "Ірина", "Богдан", "Галина", "Тарас", "Ярослава", "Юрій", "Світлана"],
        ["Шевченко", "Коваленко", "Бондаренко", "Ткаченко", "Кравченко", "Олійник", "Мельник", "Лисенко", "Їжакевич", "Гончаренко"],
        ["Київ", "Харків", "Одеса", "Дніпро", "Львів", "Запоріжжя", "Вінниця", "Чернігів", "Житомир", "Івано-Франківськ"],
        "UA", "example.com.ua",
        ["oleksandr", "oksana", "andrii", "iryna", "bohdan", "halyna", "taras", "yaroslava", "yurii", "svitlana"],
        ["shevchenko", "kovalenko", "bondarenko", "tkachenko", "kravchenko", "oliinyk", "melnyk", "lysenko", "yizhakevych", "honcharenko"],
    ),
    "el": (
        ["Γιώργος", "Μαρία", "Δημήτρης", "Ελένη", "Νίκος", "Αικατερίνη", "Κωνσταντίνος", "Σοφία", "Παναγιώτης", "Βασιλική"],
        ["Παπαδόπουλος", "Παπαδοπούλου", "Γεωργίου", "Νικολάου", "Οικονόμου", "Καραγιάννης", "Βασιλείου", "Αντωνίου", "Μακρή", "Ιωάννου"],
        ["Αθήνα", "Θεσσαλονίκη", "Πάτρα", "Ηράκλειο", "Λάρισα", "Βόλος", "Ιωάννινα", "Χανιά", "Καλαμάτα", "Ρόδος"],
        "GR", "example.gr",
        ["giorgos", "maria", "dimitris", "eleni", "nikos", "aikaterini", "konstantinos", "sofia", "panagiotis", "vasiliki"],
        ["papadopoulos", "papadopoulou", "georgiou", "nikolaou", "oikonomou", "karagiannis", "vasileiou", "antoniou", "makri", "ioannou"],
    ),
    "ar": (
        ["محمد", "فاطمة", "أحمد", "عائشة", "علي", "مريم", "يوسف", "خديجة", "عمر", "زينب"],
        ["العلي", "الحسن", "الأحمد", "السيد", "المصري", "الخطيب", "النجار", "الشامي", "القاسم", "الحداد"],
        ["القاهرة", "الرياض", "دبي", "الدار البيضاء", "عمّان", "بيروت", "تونس", "الإسكندرية", "جدة", "مسقط"],
        "EG", "example.eg",
        ["mohamed", "fatima", "ahmed", "aisha", "ali", "maryam", "youssef", "khadija", "omar", "zainab"],
        ["alali", "alhassan", "alahmad", "alsayed", "almasri", "alkhatib", "alnajjar", "alshami", "alqasim", "alhaddad"],
    ),
    "he": (
        ["נועה", "יוסף", "שרה", "דוד", "מיכל", "אברהם", "תמר", "משה", "רחל", "איתן"],
        ["כהן", "לוי", "מזרחי", "פרץ", "ביטון", "אברהם", "פרידמן", "אזולאי", "דהן", "שפירא"],
        ["ירושלים", "תל אביב-יפו", "חיפה", "באר שבע", "אשדוד", "נתניה", "ראשון לציון", "פתח תקווה", "אילת", "טבריה"],
        "IL", "example.co.il",
        ["noa", "yosef", "sara", "david", "michal", "avraham", "tamar", "moshe", "rachel", "eitan"],
        ["cohen", "levi", "mizrahi", "peretz", "biton", "avraham", "friedman", "azoulay", "dahan", "shapira"],
    ),
    "hi": (
        ["अमित", "प्रिया", "राहुल", "अनीता", "सुरेश", "कविता", "विकास", "पूजा", "संजय", "नेहा"],
        ["शर्मा", "वर्मा", "गुप्ता", "सिंह", "कुमार", "पटेल", "यादव", "मिश्रा", "जोशी", "चौधरी"],
        ["नई दिल्ली", "मुंबई", "कोलकाता", "चेन्नई", "बेंगलुरु", "हैदराबाद", "पुणे", "जयपुर", "लखनऊ", "वाराणसी"],
        "IN", "example.in",
        ["amit", "priya", "rahul", "anita", "suresh", "kavita", "vikas", "pooja", "sanjay", "neha"],
        ["sharma", "verma", "gupta", "singh", "kumar", "patel", "yadav", "mishra", "joshi", "chaudhary"],
    ),
    "th": (
        ["สมชาย", "สมศรี", "ประเสริฐ", "มาลี", "วิชัย", "สุดา", "ธนากร", "กาญจนา", "อนุชา", "พิมพ์ชนก"],
        ["ศรีสุข", "วงศ์สวัสดิ์", "แก้วมณี", "ทองดี", "บุญมา", "จันทร์เพ็ญ", "สุขสวัสดิ์", "รัตนพันธ์", "ใจดี", "พงษ์ไพบูลย์"],
        ["กรุงเทพมหานคร", "เชียงใหม่", "ภูเก็ต", "ขอนแก่น", "นครราชสีมา", "หาดใหญ่", "พัทยา", "อุดรธานี", "เชียงราย", "สุราษฎร์ธานี"],
        "TH", "example.co.th",
        ["somchai", "somsri", "prasert", "mali", "wichai", "suda", "thanakorn", "kanjana", "anucha", "pimchanok"],
        ["srisuk", "wongsawat", "kaewmanee", "thongdee", "boonma", "janpen", "suksawat", "rattanaphan", "jaidee", "pongpaiboon"],
    ),
    "zh": (
        ["伟", "芳", "娜", "秀英", "敏", "静", "丽", "强", "磊", "洋"],
        ["王", "李", "张", "刘", "陈", "杨", "黄", "赵", "吴", "周"],
        ["北京", "上海", "广州", "深圳", "成都", "杭州", "武汉", "西安", "南京", "重庆"],
        "CN", "example.cn",
        ["wei", "fang", "na", "xiuying", "min", "jing", "li", "qiang", "lei", "yang"],
        ["wang", "li", "zhang", "liu", "chen", "yang", "huang", "zhao", "wu", "zhou"],
    ),
    "ja": (
        ["翔太", "さくら", "大輔", "陽菜", "健一", "美咲", "拓也", "ゆい", "直樹", "あかり"],
        ["佐藤", "鈴木", "高橋", "田中", "伊藤", "渡辺", "山本", "中村", "小林", "加藤"],
        ["東京", "大阪", "横浜", "名古屋", "札幌", "福岡", "神戸", "京都", "川崎", "さいたま"],
        "JP", "example.jp",
        ["shota", "sakura", "daisuke", "hina", "kenichi", "misaki", "takuya", "yui", "naoki", "akari"],
        ["sato", "suzuki", "takahashi", "tanaka", "ito", "watanabe", "yamamoto", "nakamura", "kobayashi", "kato"],
    ),
    "ko": (
        ["민준", "서연", "도윤", "지우", "하준", "서윤", "시우", "하은", "주원", "지민"],
        ["김", "이", "박", "최", "정", "강", "조", "윤", "장", "임"],
        ["서울", "부산", "인천", "대구", "대전", "광주", "울산", "수원", "창원", "제주"],
        "KR", "example.kr",
        ["minjun", "seoyeon", "doyun", "jiwoo", "hajun", "seoyun", "siwoo", "haeun", "juwon", "jimin"],
        ["kim", "lee", "park", "choi", "jung", "kang", "cho", "yoon", "jang", "lim"],
    ),
}

# Letters NFKD does not take apart.
FOLD = {"ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th", "æ": "ae", "Æ": "Ae", "ø": "o", "Ø": "O", "ß": "ss", "ı": "i", "İ": "I"}


def ascii_fold(s: str) -> str:
    s = "".join(FOLD.get(c, c) for c in s)
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if c.isascii() and (c.isalnum() or c in ".-"))


def customer(rng: random.Random, i: int, lang: str) -> dict:
    first, last, cities, country, domain, rfirst, rlast = LANGS[lang]
    a = rng.randrange(len(first))
    b = rng.randrange(len(last))
    if rfirst is None:
        local = f"{ascii_fold(first[a])}.{ascii_fold(last[b])}".lower().replace(" ", "")
    else:
        local = f"{rfirst[a]}.{rlast[b % len(rlast)]}"
    # East Asian names: family name first, no space.
    name = f"{last[b]}{first[a]}" if lang in ("zh", "ja", "ko") else f"{first[a]} {last[b]}"
    return {
        "id": i,
        "name": name,
        "email": f"{local}{rng.randrange(100)}@{domain}",
        "city": rng.choice(cities),
        "country": country,
        "phone": f"+{rng.randrange(1, 99)} {rng.randrange(100, 999)} {rng.randrange(100, 999)} {rng.randrange(1000, 9999)}",
        "balance": round(rng.uniform(-500, 25000), 2),
        "active": rng.random() < 0.8,
        "created_at": f"20{rng.randrange(15, 26)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
    }


def customers(n: int, seed: int = 1, langs: list[str] | None = None) -> list[dict]:
    rng = random.Random(seed)
    langs = langs or list(LANGS)
    return [customer(rng, i + 1, langs[rng.randrange(len(langs))]) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--langs", help="comma-separated, of " + ",".join(LANGS))
    args = ap.parse_args()
    langs = args.langs.split(",") if args.langs else None
    rows = customers(args.rows, args.seed, langs)
    sys.stdout.write(json.dumps(rows, ensure_ascii=False, separators=(",", ":")))


if __name__ == "__main__":
    main()
