"""The text banks of the hard retrieval evaluation (`hard_memories.py` assembles them).

Written for this repository; no line comes from an external dataset. Each `Item` is a
small storyline planted in a conversation: its beats are turns, one question asks about
it. A beat reads "R W: text", R its role and W who says it:

- E: evidence, a turn that answers the question;
- X: stale, an earlier statement the evidence supersedes (a fact that changed);
- C: context, a turn on the same matter that does not answer (a plan, an aftermath);
- D: distractor, a turn that shares words with the question or the evidence.

E, X and C beats land in distinct sessions in the order written; D beats anywhere.
W is S (the item's subject) or O (the other speaker). `{name}` fields are drawn from
`POOLS` (`city1` and `city2` are two distinct cities); `{S}` and `{O}` are the speakers'
names and `{date}` in an answer is the first evidence turn's session date.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    beats: tuple[str, ...]
    asks: tuple[tuple[str, str], ...]  # (category, question): the generator asks one
    answer: str


@dataclass(frozen=True)
class Bank:
    """Everything one language's conversations are made of."""

    language: str
    names: tuple[str, ...]
    items: tuple[Item, ...]
    quotas: dict[str, int]  # questions per conversation, by category
    fillers: tuple[str, ...]  # small talk, first person; {O} is the addressee
    leads: tuple[str, ...]  # what a storyline turn may open with
    tails: tuple[str, ...]  # ... and end with: real turns carry more than one thing
    pools: dict[str, tuple[str, ...]]


def item(*beats: str, ask: dict[str, str], answer: str) -> Item:
    return Item(beats=beats, asks=tuple(ask.items()), answer=answer)


# ---------------------------------------------------------------- English

# Facts asked either in other words ("paraphrase": synonyms, few shared content words)
# or in other inflections of the evidence's words ("inflection": deadline / deadlines,
# traveled / travel, trip / trips), some irregular (bought / buying) as in real text.
EN_FACTS = (
    item(
        "E S: We adopted a {pet} from the shelter on Saturday and named it {petname}.",
        "D S: Naming animals is the hardest part, honestly.",
        "D O: We're thinking of adopting a kitten too, the kids won't stop asking.",
        "D O: Every animal at that rescue has a sad story, I can't go in there.",
        "D S: My cousin keeps adopting plants instead of animals, her flat is a jungle.",
        ask={
            "paraphrase": "What did {S} call the new companion from the rescue?",
            "inflection": "What's the name of the animal {S} was adopting?",
        },
        answer="{petname}",
    ),
    item(
        "E S: The deadline for my {project} is next {weekday}, so I'm barely sleeping.",
        "D S: I can't sleep before any deadline, it's a curse.",
        "D O: My own deadline got moved to next month, what a relief.",
        "D O: I never meet deadlines, my boss has given up on me.",
        "D O: Is that big submission of yours on the calendar yet?",
        "D S: I haven't even opened the {project} reading list, oops.",
        "D S: Slept badly again, the neighbours had a party until three.",
        ask={
            "paraphrase": "On which day is {S}'s {project} due?",
            "inflection": "What deadlines have been costing {S} sleep?",
        },
        answer="{weekday}",
    ),
    item(
        "E S: I traveled to {city} for a conference last week and got lost on the metro.",
        "D S: Traveling for work sounds glamorous until you attend the third conference in a row.",
        "D O: I was in Madrid for work last month, the hotel was awful.",
        "D O: I love to travel but conferences bore me to death.",
        "D S: The metro strike means I'm walking to the office all week.",
        "D S: The conference app keeps sending me notifications, so annoying.",
        ask={
            "paraphrase": "Which city did {S} fly to for a conference?",
            "inflection": "Where did {S} travel to attend conferences?",
        },
        answer="{city}",
    ),
    item(
        "E S: We booked a trip to {country} for August, two weeks of beaches.",
        "D S: Booking trips online is a nightmare, so many hidden fees.",
        "D O: We're going camping in the mountains in July, nothing fancy.",
        "D O: Trips with kids are never relaxing, trust me.",
        "D S: I keep booking dentist appointments and then forgetting them.",
        ask={
            "paraphrase": "Where is {S} going on holiday later this year?",
            "inflection": "What trips is {S} booking?",
        },
        answer="{country}",
    ),
    item(
        "E S: I cooked {dish} for my in-laws on Sunday and they asked for seconds.",
        "D S: Sundays at my family's place always mean too much cooking.",
        "D O: I made roast chicken for my parents on Saturday, total disaster.",
        "D O: My family never lets me near the stove, I burn everything.",
        "D S: Cooking for one is so boring, I mostly order in.",
        ask={
            "paraphrase": "What meal did {S} make for the partner's family?",
            "inflection": "What was {S} cooking for the family on Sundays?",
        },
        answer="{dish}",
    ),
    item(
        "E S: I've painted the spare bedroom {color}, it feels so much bigger now.",
        "D S: Choosing a paint colour is the hardest part, so many greys.",
        "D O: We painted our living room grey, I already regret it.",
        "D O: We should repaint the hallway, the walls are filthy.",
        "D S: Our guest room is full of boxes, nobody can sleep there.",
        ask={
            "paraphrase": "What colour are the walls of {S}'s guest room now?",
            "inflection": "What colour was {S} painting the bedrooms?",
        },
        answer="{color}",
    ),
    item(
        "E S: I'm studying {language} twice a week with a tutor online.",
        "D S: My language tutor cancelled again, second time this month.",
        "D O: I did an evening class in French years ago, I remember nothing.",
        "D O: My tutor at school said I had no talent for languages.",
        "D S: Learning to drive is harder than I expected.",
        ask={
            "paraphrase": "Which foreign tongue is {S} picking up?",
            "inflection": "What language studies is {S} doing with tutors?",
        },
        answer="{language}",
    ),
    item(
        "E S: I ran my first {distance} on the river path this morning, slowly but I finished.",
        "D S: I never finish my running playlist before I'm out of breath.",
        "D O: I ran a race once and swore never again.",
        "D O: Running in this heat is a terrible idea.",
        "D S: The river path floods every spring, it's a swamp right now.",
        ask={
            "paraphrase": "How far did {S} jog for the first time?",
            "inflection": "What running distance did {S} finish?",
        },
        answer="{distance}",
    ),
    item(
        "E S: I bought a second-hand car, a {car}, and it drives like a dream.",
        "D S: Buying anything second-hand online makes me nervous.",
        "D O: We bought a new electric car last spring, still getting used to it.",
        "D O: Second-hand shops are my guilty pleasure.",
        "D S: Our car insurance went up again, unbelievable.",
        ask={
            "paraphrase": "What second-hand vehicle did {S} purchase?",
            "inflection": "Which second-hand cars was {S} buying?",
        },
        answer="{car}",
    ),
    item(
        "E S: I planted {plant} along the fence, fingers crossed they survive.",
        "D S: Planting season is here, the garden centre is packed.",
        "D O: I planted herbs on the balcony, the basil died in a week.",
        "D O: Our plants die the moment I look at them.",
        "D S: The fence between us and the neighbours needs fixing.",
        ask={
            "paraphrase": "What is growing along {S}'s fence?",
            "inflection": "What plants has {S} been planting?",
        },
        answer="{plant}",
    ),
    item(
        "E S: I went to the {band} concert on Friday, my ears are still ringing.",
        "D S: I go to fewer concerts than I used to, getting old.",
        "D O: I saw a jazz trio at the pub on Thursday, so good.",
        "D O: Concert tickets cost a fortune these days.",
        "D S: Friday was a write-off, I slept through my alarm.",
        ask={
            "paraphrase": "Which musicians did {S} watch perform?",
            "inflection": "Which concerts did {S} go to?",
        },
        answer="{band}",
    ),
    item(
        "E S: I got my dad a {gift} as a birthday gift, he loved it.",
        "D S: Birthdays sneak up on me, I'm always late with gifts.",
        "D O: I got my mum a scarf for her birthday, she exchanged it.",
        "D O: Birthdays in my family are chaos, twelve cousins and one cake.",
        "D S: I'm terrible at choosing presents, I always panic.",
        ask={
            "paraphrase": "What did {S} give their dad for his birthday?",
            "inflection": "What did {S} give as gifts on birthdays?",
        },
        answer="{gift}",
    ),
    item(
        "E S: I hurt my {bodypart} lifting boxes, the physio says rest for two weeks.",
        "D S: Every part of my body hurts after the gym.",
        "D O: I twisted my ankle on the stairs last month, still sore.",
        "D O: My back hurts just from sitting at this desk.",
        "D S: The physio clinic has the worst parking in town.",
        ask={
            "paraphrase": "What injury is {S} recovering from?",
            "inflection": "Which body part hurts since {S} lifted the box?",
        },
        answer="{bodypart}",
    ),
    item(
        "E S: I'm reading {book} at the moment and I can't put it down.",
        "D S: I read the news lately and it just makes me sad.",
        "D O: I'm stuck on a boring biography, I might give up on it.",
        "D O: I bought three books at the airport and read none of them.",
        "D S: Can't put my phone down lately, it's a problem.",
        ask={
            "paraphrase": "Which novel has {S} hooked lately?",
            "inflection": "What book does {S} read lately?",
        },
        answer="{book}",
    ),
    item(
        "E S: Baked a {cake} cake for the office party and it vanished in ten minutes.",
        "D S: Baking is my therapy, but the office never gets any.",
        "D O: I brought cookies to the office once and nobody touched them.",
        "D O: Our office parties are so awkward, nobody talks.",
        "D S: I ate way too much at that party, never again.",
        ask={
            "paraphrase": "What dessert did {S} bring to the office party?",
            "inflection": "What cakes does {S} bake for office parties?",
        },
        answer="{cake}",
    ),
    item(
        "E S: I volunteer at the {charity} on Saturday mornings now.",
        "D O: I help at my kid's school on Fridays, reading with the little ones.",
        "D O: Saturday mornings are for sleeping in, nothing else.",
        "D S: They asked for volunteers at work for the charity run, I hid.",
        ask={
            "paraphrase": "Where does {S} help out for free at the weekend?",
            "inflection": "Where has {S} been volunteering on Saturdays?",
        },
        answer="{charity}",
    ),
    item(
        "E S: I photographed the {occasion} at my cousin's place, the pictures came out great.",
        "D S: Photographing people is so much harder than landscapes.",
        "D O: I took the photos at my friend's wedding, never again.",
        "D O: My cousin wants me to take photos at her engagement, no pressure.",
        "D S: My camera battery died halfway through the hike.",
        ask={
            "paraphrase": "At which occasion was {S} the one with the camera?",
            "inflection": "What was {S} photographing for the cousins?",
        },
        answer="{occasion}",
    ),
    item(
        "E S: My son started swimming lessons at the {pool} pool, he loves the water.",
        "D S: Swimming was my worst lesson at school.",
        "D O: My daughter does gymnastics on Wednesdays, she's fearless.",
        "D O: I never learned to swim properly, it's embarrassing.",
        "D S: My son refuses to eat anything green.",
        ask={
            "paraphrase": "Where does {S}'s kid take classes in the water?",
            "inflection": "Where does {S}'s son swim for his lesson?",
        },
        answer="{pool}",
    ),
    item(
        "E S: We hiked up {mountain} on Sunday, the view from the top was unreal.",
        "D S: I love a hike with a view, any tips for the next one?",
        "D O: We walked along the coast on Saturday, windy but gorgeous.",
        "D O: The view from my office is a parking lot.",
        "D S: Climbing the stairs at work is the only exercise I get.",
        ask={
            "paraphrase": "Which peak did {S} climb at the weekend?",
            "inflection": "What hikes did {S} do with views from the top?",
        },
        answer="{mountain}",
    ),
    item(
        "E S: We're renovating the kitchen, the new {floor} floor arrives next week.",
        "D S: The floors in our hallway creak like crazy.",
        "D O: We redid our bathroom last year, it took forever.",
        "D O: Renovations always cost twice what you planned.",
        "D S: The kitchen tap has been dripping for days.",
        ask={
            "paraphrase": "Which room of {S}'s home is being redone?",
            "inflection": "What renovation did {S} mention with new floors?",
        },
        answer="the kitchen, {floor} floor",
    ),
    item(
        "E S: I met up with my old school friend {friend} after fifteen years, no time had passed.",
        "D S: Meeting new friends as an adult is so hard.",
        "D O: I bumped into my old teacher at the supermarket, so weird.",
        "D O: School reunions give me anxiety.",
        "D S: I'm meeting the accountant tomorrow, wish me luck.",
        ask={
            "paraphrase": "Which childhood pal did {S} reconnect with?",
            "inflection": "Which friends from school was {S} meeting?",
        },
        answer="{friend}",
    ),
    item(
        "E S: I knitted a {garment} for my niece, it took me a month.",
        "D S: My nieces are growing up so fast.",
        "D O: I sewed curtains for the living room, they're a bit crooked.",
        "D O: My grandmother tried to teach me knitting, I gave up.",
        "D S: My niece only wants video games for her birthday.",
        ask={
            "paraphrase": "What handmade item did {S} give a young relative?",
            "inflection": "What has {S} been knitting for nieces?",
        },
        answer="{garment}",
    ),
)

# "When did ..." (the answer is the evidence turn's session date, stored with it) and
# "what did ... do before ...": the plan and the aftermath, or the later step, are
# context turns on the same matter that share more words with the question.
EN_TEMPORAL = (
    item(
        "C S: I'm thinking about signing up for the {race} in town this year.",
        "E S: Crossed the finish line of the {race} this morning, my legs are jelly!",
        "C O: Are your legs still sore after the {race}?",
        ask={"temporal": "When did {S} complete the {race}?"},
        answer="{date}",
    ),
    item(
        "C S: My {sibling}'s wedding is coming up and I still need something to wear.",
        "E S: The wedding was beautiful, my {sibling} cried all through the vows.",
        "C O: Did the photographer send the wedding photos yet?",
        ask={"temporal": "When did {S}'s {sibling} get married?"},
        answer="{date}",
    ),
    item(
        "C S: I have to get my wisdom tooth out soon, I'm dreading it.",
        "E S: Had the wisdom tooth pulled today, my face looks like a balloon.",
        "C S: Still eating soup only, the tooth thing was rough.",
        ask={"temporal": "When did {S} have the dental surgery?"},
        answer="{date}",
    ),
    item(
        "C S: We're viewing flats in {area} this weekend, fingers crossed.",
        "E S: We got the keys to the new flat in {area} today!",
        "C O: How's the new place in {area} working out?",
        ask={"temporal": "When did {S} move into the apartment in {area}?"},
        answer="{date}",
    ),
    item(
        "C S: My driving test is booked, I'm terrified.",
        "E S: I passed my driving test, first try!",
        "C O: Now that you can drive, road trip?",
        ask={"temporal": "When did {S} get the driver's licence?"},
        answer="{date}",
    ),
    item(
        "C S: Thinking about a weekend in {city} with some friends.",
        "E S: Just got back from {city}, what a weekend.",
        "D O: I've never been to {city}, is it worth it?",
        ask={"temporal": "When did {S} visit {city}?"},
        answer="{date}",
    ),
    item(
        "E S: I'm working as {job1} at the moment, the shifts are long.",
        "C S: Today was my first day as {job2}, exhausted but happy.",
        "D O: My cousin always wanted to be {job2}.",
        ask={"temporal": "What did {S} do for a living before becoming {job2}?"},
        answer="{job1}",
    ),
    item(
        "E S: My new obsession is {hobby1}, I go every Thursday.",
        "C S: I'm completely hooked on {hobby2} now, three times a week.",
        "D O: I tried {hobby2} once and pulled a muscle.",
        ask={"temporal": "Which hobby did {S} have before getting into {hobby2}?"},
        answer="{hobby1}",
    ),
    item(
        "E S: Our flat in {city1} is tiny but the neighbourhood is lovely.",
        "C S: First week in {city2}, the new job keeps me busy.",
        "D O: Everyone I know is moving to {city2} lately.",
        ask={"temporal": "Where did {S} live before relocating to {city2}?"},
        answer="{city1}",
    ),
    item(
        "E S: I've been driving the same {car1} for ten years, it refuses to die.",
        "C S: Picked up the new {car2} today, it still smells new.",
        "D O: A {car2} is way too expensive for me.",
        ask={"temporal": "What car did {S} drive before getting the {car2}?"},
        answer="{car1}",
    ),
)

# Two evidence turns, in different sessions (once, one per speaker).
EN_MULTI = (
    item(
        "E S: Back from {country1}, the street food there was unreal.",
        "E S: Landed in {country2} last night, travelling always wrecks me.",
        "D O: I'd love to see {country3} one day.",
        ask={"multi": "Which countries has {S} travelled to this year?"},
        answer="{country1}, {country2}",
    ),
    item(
        "E S: Started {instrument1} lessons on Tuesday, my fingers hurt.",
        "E S: I also picked up the {instrument2} again, my second instrument now.",
        "D O: My neighbour practises the drums at midnight.",
        ask={"multi": "What musical instruments is {S} learning?"},
        answer="{instrument1}, {instrument2}",
    ),
    item(
        "E S: My cousin {friend1} is staying with us this week.",
        "E S: My old roommate {friend2} surprised me with a visit on Sunday.",
        "D O: We never have guests, our sofa bed is a torture device.",
        ask={"multi": "Who came to stay with or visit {S} recently?"},
        answer="{friend1}, {friend2}",
    ),
    item(
        "E S: Nothing beats {activity} on a Sunday morning.",
        "E O: Funny, {activity} is my favourite thing too.",
        "D S: Sunday mornings used to be for cleaning, not anymore.",
        ask={"multi": "What do {S} and {O} both like doing?"},
        answer="{activity}",
    ),
    item(
        "E S: Sprained my ankle at {sport} practice, I'm on crutches now.",
        "E S: And now the dentist says I need a filling, my health is falling apart.",
        "D O: I haven't been to a doctor in years, knock on wood.",
        ask={"multi": "What health problems has {S} had lately?"},
        answer="ankle, filling",
    ),
    item(
        "E S: I binged {show1} over the weekend, the whole series in two days.",
        "E S: Started watching {show2} last night, the first episode was slow.",
        "D O: I don't even own a television anymore.",
        ask={"multi": "Which TV series has {S} been watching?"},
        answer="{show1}, {show2}",
    ),
    item(
        "E S: Signed up for a {course1} class at the college.",
        "E S: I'm also doing an online {course2} course in the evenings.",
        "D O: The college car park is a nightmare in the mornings.",
        ask={"multi": "What classes is {S} taking?"},
        answer="{course1}, {course2}",
    ),
    item(
        "E S: You have to try {restaurant1}, best ramen in town, I recommend it to everyone.",
        "E S: {restaurant2} does an amazing brunch too, go early.",
        "D O: We never eat out, it's too expensive.",
        ask={"multi": "Which places to eat did {S} recommend?"},
        answer="{restaurant1}, {restaurant2}",
    ),
)

# A value that changes: the stale statement first, the current one in a later session.
EN_CHANGING = (
    item(
        "X S: I live in {city1}, right by the river.",
        "E S: We moved to {city2} last month, still unpacking boxes.",
        "D O: I could never live in a big city.",
        ask={"changing": "Which city does {S} live in now?"},
        answer="{city2}",
    ),
    item(
        "X S: I work at {company1}, mostly on the payments team.",
        "E S: I left my old job and joined {company2} on Monday.",
        "D O: My work is so boring lately.",
        ask={"changing": "Where does {S} work these days?"},
        answer="{company2}",
    ),
    item(
        "X S: The {project} deadline is the {day1}, it's tight.",
        "E S: Change of plan, they moved the {project} deadline to the {day2}.",
        "D O: Deadlines at my job move every week.",
        ask={"changing": "What is the current deadline for {S}'s {project}?"},
        answer="the {day2}",
    ),
    item(
        "X S: I'm vegetarian, but I still eat cheese like crazy.",
        "E S: I went fully vegan in {month}, I even gave up cheese.",
        "D O: I could never give up meat.",
        ask={"changing": "What diet does {S} follow at the moment?"},
        answer="vegan",
    ),
    item(
        "X S: I go to the gym every {weekday1} after work.",
        "E S: Switched my gym day to {weekday2} mornings, much quieter.",
        "D O: The gym is too crowded after work.",
        ask={"changing": "On which day does {S} go to the gym now?"},
        answer="{weekday2}",
    ),
    item(
        "X S: I'm seeing someone called {friend1}, early days though.",
        "E S: {friend1} and I broke up, I'm dating {friend2} now.",
        "D O: Dating apps are exhausting.",
        ask={"changing": "Who is {S} dating now?"},
        answer="{friend2}",
    ),
    item(
        "X S: I cycle to work, about twenty minutes each way.",
        "E S: Since the office move I take the train, the bike ride is too far now.",
        "D O: My commute is an hour each way.",
        ask={"changing": "How does {S} get to the office these days?"},
        answer="the train",
    ),
    item(
        "X S: Our rent is {rent1} a month, which is fine for the area.",
        "E S: We signed the new lease, the rent is {rent2} from now on.",
        "D O: Rent in this city is madness.",
        ask={"changing": "How much rent does {S} pay now?"},
        answer="{rent2}",
    ),
)

EN_FILLERS = (
    "Had {food} for dinner, not bad at all.",
    "How was your weekend, {O}?",
    "The weather has been {weather} all week.",
    "I finally finished watching {show}, what an ending.",
    "Work has been crazy, so many meetings.",
    "We should plan something together soon.",
    "Haha, that's so you.",
    "Oh no, I'm sorry to hear that.",
    "That sounds amazing!",
    "Tell me more about it next time.",
    "I need to do {chore} today, I keep putting it off.",
    "Did you see the news about the bridge closing?",
    "My phone died in the middle of the call, sorry.",
    "I'm so tired today, I barely slept.",
    "Coffee first, then I'm human again.",
    "Are you free on {weekday} evening?",
    "I'm on my way to {errand}, talk later.",
    "My mum called again about the family dinner.",
    "The new {app} update moved all the buttons.",
    "I've been trying to drink more water, it's harder than it sounds.",
    "Honestly I just want a quiet week.",
    "The bus was late again this morning.",
    "We ordered {food} and watched a film.",
    "I can't believe it's already {weekday}.",
    "Sounds good, let's do that.",
    "I'm thinking of getting a haircut, any ideas?",
    "My boss wants the report by tomorrow, of course.",
    "The neighbours are drilling again, send help.",
    "How's your family doing, {O}?",
    "I found an old photo of us from years ago.",
    "Did you ever fix that leaky tap?",
    "I'm trying a new recipe with {food} tonight.",
    "Happy Friday! Any plans?",
    "I spent the whole afternoon doing {chore}.",
    "My sister says hi, by the way.",
    "The traffic on the ring road was terrible.",
    "I keep forgetting to call the bank.",
    "Let's catch up properly soon.",
    "It was {weather} so we stayed inside all day.",
    "I just got home, long day.",
    "Do you still have that book I lent you?",
    "That's a great idea, {O}.",
    "I'm not sure yet, I'll let you know.",
    "My laptop is so slow, I need a new one.",
    "We had a barbecue in the garden, so nice.",
    "Our internet was down all evening.",
    "I started a podcast about history, it's addictive.",
    "Ugh, Mondays.",
    "I've been cleaning out the garage all morning.",
    "The supermarket was out of {food} again.",
)

EN_LEADS = (
    "Oh, before I forget!", "Guess what?", "Big news!", "Quick update.", "Okay, so.",
    "Ha, funny you ask.", "Long week here.", "Hi again!", "Sorry for the late reply.",
    "You won't believe this.",
)  # fmt: skip
EN_TAILS = (
    "How about you?", "Anyway, how's your week going?", "I'll tell you more later.",
    "Work is mad as usual though.", "Also the weather here is awful.",
    "Anyway, enough about me.", "Can't wait to see you.", "The kids say hi.",
    "I really need a holiday.", "Did you end up going to that thing?",
    "My phone is about to die, so quickly.", "Still can't believe it.",
)  # fmt: skip

EN_POOLS = {
    "pet": ("beagle", "tabby cat", "rabbit", "greyhound", "parrot", "ginger kitten", "terrier"),
    "petname": ("Biscuit", "Pepper", "Mango", "Ziggy", "Olive", "Bruno", "Waffles"),
    "project": ("thesis", "grant report", "tax return", "portfolio review", "audit report"),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "city": (
        "Lisbon", "Osaka", "Toronto", "Krakow", "Melbourne", "Nairobi", "Seville",
        "Hamburg", "Denver", "Bogota",
    ),
    "country": ("Greece", "Vietnam", "Portugal", "Iceland", "Mexico", "Croatia", "Morocco"),
    "dish": ("lasagne", "a lamb tagine", "paella", "mushroom risotto", "beef stew"),
    "color": ("sage green", "pale yellow", "navy blue", "terracotta", "lavender"),
    "language": ("Japanese", "Portuguese", "Korean", "German", "Arabic", "Italian"),
    "distance": ("10k", "half marathon", "5k", "15k"),
    "car": ("Toyota Corolla", "Honda Jazz", "Skoda Octavia", "Ford Fiesta", "Volvo estate"),
    "plant": ("tomatoes", "sunflowers", "lavender bushes", "raspberries", "courgettes"),
    "band": ("Velvet Foxes", "Paper Lanterns", "North Harbour", "Quiet Giants"),
    "gift": ("record player", "fishing rod", "leather wallet", "telescope", "coffee grinder"),
    "bodypart": ("shoulder", "lower back", "wrist", "knee", "neck"),
    "book": ("The Salt Road", "Winter Orchard", "A House of Glass", "The Ninth Lantern"),
    "cake": ("lemon drizzle", "carrot", "chocolate fudge", "coffee walnut"),
    "charity": ("food bank", "public library", "soup kitchen", "youth club", "charity shop"),
    "occasion": ("christening", "engagement party", "fiftieth birthday", "graduation dinner"),
    "pool": ("Riverside", "Northgate", "Elm Park", "Harbour", "Westfield"),
    "mountain": ("Ben Nevis", "Snowdon", "Scafell Pike", "Pen y Fan", "Helvellyn"),
    "floor": ("oak", "walnut", "tiled", "bamboo", "slate"),
    "friend": ("Priya", "Callum", "Jonah", "Beatriz", "Tariq", "Wendy", "Dmitri"),
    "garment": ("scarf", "cardigan", "woolly hat", "pair of mittens", "blanket"),
    "race": ("half marathon", "charity 10k", "trail race", "triathlon", "fun run"),
    "sibling": ("brother", "sister", "cousin"),
    "area": ("Riverside", "the old town", "Hillcrest", "the harbour district", "Parkview"),
    "job": (
        "a barista", "a nurse", "a teacher", "an accountant", "a paramedic", "a chef",
        "a graphic designer", "an electrician", "a pharmacist",
    ),
    "hobby": ("pottery", "rock climbing", "salsa dancing", "chess", "archery", "kayaking"),
    "instrument": ("guitar", "piano", "cello", "violin", "ukulele", "saxophone"),
    "activity": ("a long bike ride", "swimming in the lake", "baking bread", "a slow breakfast"),
    "sport": ("football", "netball", "hockey", "basketball"),
    "show": ("The Lighthouse Keepers", "Cold Harbour", "Station Nine", "Marigold Lane"),
    "course": ("pottery", "first aid", "photography", "bookkeeping", "Spanish", "coding"),
    "restaurant": ("Koi House", "The Copper Pot", "Nonna's", "Blue Door", "Saffron Street"),
    "company": ("Brightline", "Northwind", "Copperleaf", "Halcyon Labs", "Meridian"),
    "day": ("12th", "15th", "18th", "21st", "28th"),
    "month": ("March", "April", "May", "June"),
    "rent": ("900 euros", "1,100 euros", "1,250 euros", "1,400 euros"),
    "food": ("pasta", "tacos", "curry", "soup", "pizza", "sushi", "a salad"),
    "weather": ("grey and rainy", "freezing", "weirdly warm", "windy"),
    "chore": ("the laundry", "the ironing", "my taxes", "the dishes", "the vacuuming"),
    "errand": ("the post office", "the pharmacy", "the supermarket", "the bank"),
    "app": ("banking", "weather", "maps", "music"),
}  # fmt: skip

ENGLISH = Bank(
    language="english",
    names=(
        "Maya", "Leo", "Nora", "Sam", "Ivy", "Theo", "Ruth", "Omar", "Clara", "Felix",
        "Hazel", "Isaac", "June", "Arthur", "Rosa", "Milo",
    ),
    items=EN_FACTS + EN_TEMPORAL + EN_MULTI + EN_CHANGING,
    quotas={"paraphrase": 5, "inflection": 5, "temporal": 4, "multi": 3, "changing": 3},
    fillers=EN_FILLERS,
    leads=EN_LEADS,
    tails=EN_TAILS,
    pools=EN_POOLS,
)  # fmt: skip

# ---------------------------------------------------------------- Spanish

# Every question of a Spanish conversation is in category "spanish"; most bridge the
# evidence by another inflection (viajar / viajes, plazo / plazos, cociné / cocinar).
ES_ITEMS = (
    item(
        "E S: Este verano quiero viajar a {pais} con mi hermana.",
        "D O: Los viajes largos en autobús me marean muchísimo.",
        "D S: Mi hermana nunca contesta los mensajes, qué desesperación.",
        ask={"spanish": "¿Qué viajes tiene pensados {S}?"},
        answer="{pais}",
    ),
    item(
        "E S: El plazo para entregar el {proyecto} termina el {dia}.",
        "D O: Con tantos plazos en el trabajo no duermo nada.",
        "D S: El {dia} tengo cena con mis padres, no me olvido.",
        ask={"spanish": "¿Qué plazos tiene {S} pendientes?"},
        answer="el {dia}",
    ),
    item(
        "X S: Vivo en {ciudad1}, cerca del mercado.",
        "E S: Nos mudamos a {ciudad2} hace un mes, todo sigue en cajas.",
        "D O: Yo no podría vivir en una ciudad tan grande.",
        ask={"spanish": "¿En qué ciudad vive {S} ahora?"},
        answer="{ciudad2}",
    ),
    item(
        "E S: Anoche cociné {plato} para mis suegros y repitieron.",
        "D O: En mi familia no me dejan acercarme a la cocina.",
        "D S: Cocinar solo para mí es aburridísimo, casi siempre pido comida.",
        ask={"spanish": "¿Qué plato preparó {S} para la familia de su pareja?"},
        answer="{plato}",
    ),
    item(
        "E S: Empecé a trabajar en {empresa}, el equipo es majísimo.",
        "D O: Mi trabajo últimamente es un aburrimiento.",
        "D S: Hoy trabajé desde casa, qué gusto.",
        ask={"spanish": "¿En qué empresa trabaja {S}?"},
        answer="{empresa}",
    ),
    item(
        "E S: Estoy estudiando {idioma} dos tardes por semana.",
        "D O: Mi profesor del colegio decía que los idiomas no eran lo mío.",
        "D S: Aprender a conducir me está costando más de lo que pensaba.",
        ask={"spanish": "¿Qué idioma estudia {S}?"},
        answer="{idioma}",
    ),
    item(
        "C S: Me apunté a la {carrera} de {ciudad}, a ver si llego a la meta.",
        "E S: ¡Terminé la {carrera} esta mañana, tengo las piernas destrozadas!",
        "C O: ¿Todavía te duelen las piernas de la {carrera}?",
        ask={"spanish": "¿Cuándo corrió {S} la {carrera}?"},
        answer="{date}",
    ),
    item(
        "E S: Por fin compré una {cosa} nueva, la vieja ya no daba más.",
        "D O: Ir de compras los sábados es mi perdición.",
        "D S: Tengo que devolver unos zapatos que no me quedan bien.",
        ask={"spanish": "¿Qué compras grandes ha hecho {S}?"},
        answer="{cosa}",
    ),
    item(
        "E S: Adoptamos un {mascota} de la protectora y se llama {nombre}.",
        "D O: Cada animal de esa protectora tiene una historia triste.",
        "D S: Mi prima adopta plantas en vez de animales, su piso es una selva.",
        ask={"spanish": "¿Qué nombre le puso {S} al animal adoptado?"},
        answer="{nombre}",
    ),
    item(
        "X S: Entreno en el gimnasio los {dia1} después del trabajo.",
        "E S: Ahora voy a entrenar los {dia2} por la mañana, hay menos gente.",
        "D O: El gimnasio está lleno a la salida del trabajo.",
        ask={"spanish": "¿Qué día entrena {S} ahora?"},
        answer="los {dia2}",
    ),
    item(
        "E S: Acabo de volver de {pais1}, la comida era increíble.",
        "E S: La semana pasada estuve en {pais2} por trabajo.",
        "D O: Algún día me encantaría conocer {pais3}.",
        ask={"spanish": "¿Qué países ha visitado {S} este año?"},
        answer="{pais1}, {pais2}",
    ),
    item(
        "E S: Trabajo de {puesto1} en el centro, con turnos larguísimos.",
        "C S: Hoy fue mi primer día como {puesto2}, qué cansancio pero qué alegría.",
        "D O: Mi primo siempre quiso ser {puesto2}.",
        ask={"spanish": "¿A qué se dedicaba {S} antes de ser {puesto2}?"},
        answer="{puesto1}",
    ),
    item(
        "E S: Pinté el salón de color {color}, parece mucho más grande.",
        "D O: Tenemos que pintar el pasillo, las paredes están fatal.",
        "D S: El salón está lleno de cajas, no hay quien se siente.",
        ask={"spanish": "¿De qué color está pintando {S} las paredes?"},
        answer="{color}",
    ),
    item(
        "E S: Reservamos una casa cerca de la playa de {playa} para agosto.",
        "D O: Las vacaciones con niños nunca son descanso.",
        "D S: Agosto en la oficina es tranquilo, casi no hay nadie.",
        ask={"spanish": "¿Dónde pasará {S} las vacaciones de verano?"},
        answer="{playa}",
    ),
    item(
        "E S: Me lesioné {parte} jugando al pádel, dos semanas de reposo.",
        "D O: A mí me duele la espalda de tanto tiempo en la silla.",
        "D S: El pádel está carísimo en mi barrio.",
        ask={"spanish": "¿Qué lesiones ha tenido {S}?"},
        answer="{parte}",
    ),
    item(
        "E S: A mi padre le regalé un {regalo} por su cumpleaños y le encantó.",
        "D O: Los cumpleaños en mi familia son un caos, doce primos y una tarta.",
        "D S: Elegir regalos me pone de los nervios, siempre dudo.",
        ask={"spanish": "¿Qué regalos hizo {S} en los cumpleaños?"},
        answer="{regalo}",
    ),
    item(
        "C S: Tengo que sacarme la muela del juicio pronto, qué miedo.",
        "E S: Hoy me sacaron la muela del juicio, tengo la cara hinchada.",
        "C S: Sigo comiendo solo sopa, lo de la muela fue duro.",
        ask={"spanish": "¿Cuándo operaron a {S} de la boca?"},
        answer="{date}",
    ),
)

ES_FILLERS = (
    "Anoche cenamos {comida}, estaba buenísimo.",
    "¿Qué tal el fin de semana, {O}?",
    "Toda la semana ha hecho {tiempo}.",
    "Por fin terminé de ver {serie}, menudo final.",
    "El trabajo está imposible, reuniones sin parar.",
    "Tenemos que quedar pronto.",
    "Jajaja, muy tú.",
    "Vaya, lo siento mucho.",
    "¡Qué maravilla!",
    "Ya me contarás con calma.",
    "Hoy tengo que {tarea}, lo llevo posponiendo días.",
    "¿Viste la noticia del puente cortado?",
    "Se me murió el móvil en mitad de la llamada, perdona.",
    "Qué cansancio, casi no he dormido.",
    "Primero un café y luego ya soy persona.",
    "¿Estás libre el {dia} por la tarde?",
    "Voy de camino {recado}, luego hablamos.",
    "Mi madre ha vuelto a llamar por la comida familiar.",
    "El autobús llegó tarde otra vez.",
    "Pedimos {comida} y vimos una película.",
    "No me creo que ya sea {dia}.",
    "Me parece bien, hagamos eso.",
    "Estoy pensando en cortarme el pelo, ¿alguna idea?",
    "Mi jefe quiere el informe para mañana, cómo no.",
    "Los vecinos están taladrando otra vez.",
    "¿Qué tal tu familia, {O}?",
    "Encontré una foto nuestra de hace años.",
    "¡Feliz viernes! ¿Planes?",
    "Me pasé la tarde entera haciendo {tarea2}.",
    "Mi hermana te manda saludos.",
    "Había un atasco horrible en la circunvalación.",
    "Sigo sin llamar al banco, se me olvida siempre.",
    "A ver si nos ponemos al día pronto.",
    "Acabo de llegar a casa, día largo.",
    "Todavía no lo sé, ya te digo.",
    "El portátil va lentísimo, necesito uno nuevo.",
    "Hicimos una barbacoa en el jardín, qué bien estuvo.",
    "Nos quedamos sin internet toda la tarde.",
)

ES_LEADS = (
    "¡Oye, antes de que se me olvide!", "¿A que no sabes qué?", "¡Noticia!",
    "Te cuento rápido.", "Bueno, pues.", "Ja, qué casualidad que preguntes.",
    "Semana larguísima por aquí.", "¡Hola otra vez!", "Perdona que tarde en contestar.",
)  # fmt: skip
ES_TAILS = (
    "¿Y tú qué tal?", "En fin, ¿cómo va tu semana?", "Luego te cuento más.",
    "El trabajo, una locura como siempre.", "Además aquí hace un tiempo horrible.",
    "Bueno, ya basta de hablar de mí.", "Tengo ganas de verte.", "Los niños te saludan.",
    "Necesito unas vacaciones.", "Me queda poca batería, así que rápido.",
)  # fmt: skip

ES_POOLS = {
    "pais": ("Grecia", "Japón", "México", "Portugal", "Marruecos", "Islandia", "Perú"),
    "proyecto": ("informe anual", "trabajo de fin de máster", "presupuesto", "capítulo del libro"),
    "dia": ("lunes", "martes", "miércoles", "jueves", "viernes"),
    "ciudad": ("Valencia", "Bilbao", "Sevilla", "Zaragoza", "Málaga", "Granada", "Salamanca"),
    "plato": ("paella", "cocido", "tortilla de patatas", "lentejas", "arroz negro"),
    "empresa": ("una consultora", "una editorial", "un estudio de arquitectura", "una startup"),
    "puesto": ("periodista", "dentista", "recepcionista", "electricista", "taxista", "economista"),
    "idioma": ("alemán", "japonés", "inglés", "italiano", "coreano"),
    "carrera": ("media maratón", "carrera popular", "maratón", "San Silvestre"),
    "cosa": ("lavadora", "bicicleta", "nevera", "cafetera", "tele"),
    "mascota": ("cachorro", "perro mestizo", "galgo", "gato"),
    "nombre": ("Chispa", "Lola", "Toby", "Canela", "Rayo"),
    "color": ("verde salvia", "amarillo", "azul marino", "terracota"),
    "playa": ("Conil", "Zahara", "Tarifa", "Cadaqués", "Mojácar"),
    "parte": ("la rodilla", "la muñeca", "la espalda", "el tobillo"),
    "regalo": ("tocadiscos", "reloj", "telescopio", "jersey"),
    "comida": ("pasta", "tacos", "sopa", "pizza", "sushi", "ensalada"),
    "tiempo": ("un frío horrible", "un calor raro", "viento", "lluvia"),
    "serie": ("El Faro", "Puerto Frío", "Estación Nueve", "Calle Margarita"),
    "tarea": ("poner lavadoras", "planchar", "hacer la declaración", "limpiar el baño"),
    "tarea2": ("limpieza", "la compra", "papeleo"),
    "recado": ("a correos", "a la farmacia", "al súper", "al banco"),
}  # fmt: skip

SPANISH = Bank(
    language="spanish",
    names=(
        "Lucía", "Mateo", "Carmen", "Javier", "Sofía", "Diego", "Elena", "Pablo",
        "Marta", "Andrés", "Inés", "Raúl",
    ),
    items=ES_ITEMS,
    quotas={"spanish": 12},
    fillers=ES_FILLERS,
    leads=ES_LEADS,
    tails=ES_TAILS,
    pools=ES_POOLS,
)  # fmt: skip

# ---------------------------------------------------------------- Dated questions

# A question that names a time ("last May", "two weeks ago", "en marzo", "hace 3
# semanas"), asked on a given day after the conversation (its reference instant). The
# storyline's evidence turn (E) and its time distractors (T: the same matter, worded
# alike, in other sessions) land in distinct sessions at random, and the question names
# a period that holds the evidence's session and none of the T turns' (`hard_memories`
# picks one of the periods `when` can word). Asked without the time, the T turns answer
# it as well as the evidence does.


@dataclass(frozen=True)
class Dated:
    """One language's dated questions: asked in conversations of their own (`bank`'s
    names, small talk and pools), so the other categories' conversations are unchanged."""

    bank: Bank
    category: str
    items: tuple[Item, ...]
    quota: int  # questions per conversation
    when: dict[str, str]  # how each kind of period is worded (see hard_memories.periods)
    months: tuple[str, ...]
    numbers: tuple[str, ...]  # 1, 2, ... as words; "" where a number is written as digits
    pools: dict[str, tuple[str, ...]]  # slots of `items` that `bank.pools` lacks


EN_DATED_ITEMS = (
    item(
        "E S: We had friends over and I cooked {dish1}, not a crumb left.",
        "T S: Had people round for dinner again, I made {dish2} this time.",
        "T S: Cooked {dish3} for the neighbours tonight, they were very polite about it.",
        "T O: You cook for guests so often, I'm jealous.",
        ask={"dated": "What did {S} cook for guests {when}?"},
        answer="{dish1}",
    ),
    item(
        "E S: Saw {band1} live last night, still buzzing.",
        "T S: Went to see {band2} play, the sound was muddy.",
        "T S: Another gig tonight, {band3} at the old theatre.",
        "T O: Which gig are you off to next? You see so many bands.",
        ask={"dated": "Which band did {S} see live {when}?"},
        answer="{band1}",
    ),
    item(
        "E S: We finally tried {restaurant1} for dinner, the desserts were the best part.",
        "T S: Dinner at {restaurant2} tonight, a bit overpriced.",
        "T S: Took my parents to {restaurant3} for dinner, they want to go back.",
        "T O: You eat out more than anyone I know.",
        ask={"dated": "Where did {S} go out for dinner {when}?"},
        answer="{restaurant1}",
    ),
    item(
        "E S: Spent the weekend in {city1}, we walked everywhere.",
        "T S: Off to {city2} for the weekend, back on Monday.",
        "T S: Weekend in {city3} with friends, exhausting but fun.",
        "T O: You're never home at weekends!",
        ask={"dated": "Which city did {S} spend a weekend in {when}?"},
        answer="{city1}",
    ),
    item(
        "E S: Started reading {book1}, gripping from the first page.",
        "T S: Started {book2} from the library, slow start.",
        "T S: I'm reading {book3} now, my book club chose it.",
        "T O: How do you read so many books?",
        ask={"dated": "Which book did {S} start reading {when}?"},
        answer="{book1}",
    ),
    item(
        "E S: We started watching {show1}, hooked after one episode.",
        "T S: Began {show2} last night, not sure about it yet.",
        "T S: New series for us: {show3}, the acting is great.",
        "T O: I can't keep up with all the series you watch.",
        ask={"dated": "Which series did {S} start watching {when}?"},
        answer="{show1}",
    ),
    item(
        "E S: Bought my dad a {gift1}, an early present.",
        "T S: Got my sister a {gift2} as a present for her new flat.",
        "T S: Bought a {gift3} for my mum, she'll pretend to like it.",
        "T O: You're so good at presents, I always panic.",
        ask={"dated": "What present did {S} buy {when}?"},
        answer="{gift1}",
    ),
    item(
        "E S: Hurt my {bodypart1} at the gym, I can barely move it.",
        "T S: My {bodypart2} hurts again after football.",
        "T S: Hurt my {bodypart3} carrying the shopping, I'm falling apart.",
        "T O: You get hurt more than anyone I know, slow down.",
        ask={"dated": "What did {S} hurt {when}?"},
        answer="{bodypart1}",
    ),
    item(
        "E S: Tried {hobby1} for the first time today, loved it.",
        "T S: Went to a {hobby2} taster session, not for me.",
        "T S: A friend dragged me to try {hobby3}, surprisingly fun.",
        "T O: You try a new hobby every month!",
        ask={"dated": "What new hobby did {S} try {when}?"},
        answer="{hobby1}",
    ),
    item(
        "E S: Signed up for a {course1} workshop at the community centre.",
        "T S: Booked a {course2} workshop for the spring.",
        "T S: Did a one-day {course3} workshop, useful stuff.",
        "T O: Another workshop? You never stop.",
        ask={"dated": "Which workshop did {S} sign up for {when}?"},
        answer="{course1}",
    ),
)

EN_DATED = Dated(
    bank=ENGLISH,
    category="dated",
    items=EN_DATED_ITEMS,
    quota=6,
    when={
        "day": "on {month} {day}",
        "month": "in {month}",
        "last month name": "last {month}",
        "month year": "in {month} {year}",
        "last month": "last month",
        "weeks": "{n} weeks ago",
        "week": "a week ago",
    },
    months=(
        "January", "February", "March", "April", "May", "June", "July", "August",
        "September", "October", "November", "December",
    ),
    numbers=("one", "two", "three", "four", "five", "six"),
    pools={},
)  # fmt: skip

ES_DATED_ITEMS = (
    item(
        "E S: Vinieron amigos a cenar y preparé {plato1}, no sobró nada.",
        "T S: Otra cena con invitados en casa, esta vez preparé {plato2}.",
        "T S: Preparé {plato3} para los vecinos, muy amables ellos.",
        "T O: Cocinas para invitados muchísimo, qué envidia.",
        ask={"dated-spanish": "¿Qué cocinó {S} para los invitados {when}?"},
        answer="{plato1}",
    ),
    item(
        "E S: Pasamos el fin de semana en {ciudad1}, caminamos muchísimo.",
        "T S: Me voy a {ciudad2} el fin de semana, vuelvo el lunes.",
        "T S: Fin de semana en {ciudad3} con amigos, agotador pero genial.",
        "T O: ¡Nunca estás en casa los fines de semana!",
        ask={"dated-spanish": "¿En qué ciudad pasó {S} el fin de semana {when}?"},
        answer="{ciudad1}",
    ),
    item(
        "E S: Le compré a mi padre un {regalo1}, un regalo adelantado.",
        "T S: Le compré un {regalo2} a mi hermana de regalo por su piso nuevo.",
        "T S: Compré un {regalo3} de regalo para mi madre.",
        "T O: Qué bien eliges los regalos, yo siempre dudo.",
        ask={"dated-spanish": "¿Qué regalo compró {S} {when}?"},
        answer="{regalo1}",
    ),
    item(
        "E S: Me hice daño en {parte1} en el gimnasio, casi no puedo moverme.",
        "T S: Otra vez me duele {parte2} después del fútbol.",
        "T S: Me hice daño en {parte3} cargando la compra, estoy hecho polvo.",
        "T O: Te haces daño cada dos por tres, tómatelo con calma.",
        ask={"dated-spanish": "¿Dónde se hizo daño {S} {when}?"},
        answer="{parte1}",
    ),
    item(
        "E S: Empezamos a ver {serie1}, enganchados desde el primer capítulo.",
        "T S: Anoche empecé {serie2}, no sé si me convence.",
        "T S: Serie nueva en casa: {serie3}, los actores son buenísimos.",
        "T O: No puedo seguir todas las series que ves.",
        ask={"dated-spanish": "¿Qué serie empezó a ver {S} {when}?"},
        answer="{serie1}",
    ),
    item(
        "E S: Compré una {cosa1} de segunda mano, funciona perfecta.",
        "T S: Compré una {cosa2} nueva, la vieja ya no daba más.",
        "T S: Al final compré la {cosa3} que vimos, a ver qué tal.",
        "T O: Siempre estás comprando cosas para la casa.",
        ask={"dated-spanish": "¿Qué compró {S} para la casa {when}?"},
        answer="{cosa1}",
    ),
    item(
        "E S: Por fin probamos {restaurante1}, los postres eran lo mejor.",
        "T S: Cena en {restaurante2} esta noche, un poco caro.",
        "T S: Llevé a mis padres a cenar a {restaurante3}, quieren volver.",
        "T O: Sales a cenar más que nadie que conozca.",
        ask={"dated-spanish": "¿En qué restaurante cenó {S} {when}?"},
        answer="{restaurante1}",
    ),
    item(
        "E S: Vi a {grupo1} en directo anoche, todavía estoy flotando.",
        "T S: Fui a ver a {grupo2} en directo, el sonido fatal.",
        "T S: Otro concierto esta noche: {grupo3} en el teatro viejo.",
        "T O: ¿A qué concierto vas ahora? Ves a tantos grupos.",
        ask={"dated-spanish": "¿A qué grupo vio {S} en directo {when}?"},
        answer="{grupo1}",
    ),
)

ES_DATED = Dated(
    bank=SPANISH,
    category="dated-spanish",
    items=ES_DATED_ITEMS,
    quota=6,
    when={
        "day": "el {day} de {month}",
        "month": "en {month}",
        "month year": "en {month} de {year}",
        "last month": "el mes pasado",
        "weeks": "hace {n} semanas",
        "week": "hace una semana",
    },
    months=(
        "enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
        "septiembre", "octubre", "noviembre", "diciembre",
    ),
    numbers=("uno", "dos", "tres", "", "", ""),  # "hace 4 semanas", as often written
    pools={
        "restaurante": ("Casa Lola", "El Fogón", "La Taberna Azul", "Mesón Pepe", "Bar Central"),
        "grupo": ("Los Zorros", "Farolillos", "Puerto Norte", "Gigantes Tranquilos"),
    },
)  # fmt: skip
