#!/usr/bin/env python3
"""Generate the sample holdout knowledge graphs shipped with kgeval.

Writes four small synthetic RDF graphs, one directory per KG id, next to
this file:

    hr/kg.ttl          Acme Corp HR and org graph (320 employees)
    complaints/kg.ttl  consumer complaints about financial products (2,500)
    catalogue/kg.ttl   product catalogue, names in English and German (420)
    trials/kg.ttl      clinical-trials registry, conditions in en/fr (240)

Why synthetic: the holdout has to be small, free of licences, and full of
edge cases a harness must handle (one answer over the 2,000-row gold cap,
empty answers, typed and language-tagged literals, ORDER BY cuts without
ties, and a property pair that the honeypot question relies on). The
questions.yaml files beside each graph are written by hand against this
output, so the generator must be deterministic: every graph draws from its
own random.Random with a fixed seed, nothing iterates over a set, and files
are written with "\\n" newlines. Two runs give byte-identical files.

The complaints graph deliberately shares no vocabulary local names with the
other three, because a schema-similarity gate compares holdout KGs.

Usage:  python holdout/make_sample.py
"""

from __future__ import annotations

import datetime as dt
import random
import re
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = "http://example.org"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"


# --------------------------------------------------------------------------
# Turtle writing
# --------------------------------------------------------------------------

def lit(text: str, lang: str | None = None) -> str:
    """A plain or language-tagged Turtle literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"@{lang}' if lang else f'"{escaped}"'


def typed(lexical: str, datatype: str) -> str:
    return f'"{lexical}"^^xsd:{datatype}'


def date(value: dt.date) -> str:
    return typed(value.isoformat(), "date")


def decimal(value: float) -> str:
    return typed(f"{value:.2f}", "decimal")


def integer(value: int) -> str:
    return typed(str(value), "integer")


def boolean(value: bool) -> str:
    return typed("true" if value else "false", "boolean")


class Turtle:
    """Collects one block per subject and writes them, in order, as Turtle."""

    def __init__(self, prefixes: list[tuple[str, str]]):
        self.prefixes = [("rdfs", RDFS), ("xsd", XSD)] + prefixes
        self.blocks: list[str] = []

    def add(self, subject: str, rdf_type: str, pairs: list[tuple[str, str]]) -> None:
        lines = [f"{subject} a {rdf_type}"]
        lines += [f"    {predicate} {obj}" for predicate, obj in pairs]
        self.blocks.append(" ;\n".join(lines) + " .")

    def write(self, path: Path) -> None:
        head = [f"@prefix {name}: <{iri}> ." for name, iri in self.prefixes]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            out.write("\n".join(head) + "\n\n" + "\n\n".join(self.blocks) + "\n")


def entity_prefixes(kg: str, classes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Prefixes for path-style entity IRIs: <BASE/kg/entities/Class/id>."""
    return [(short, f"{BASE}/{kg}/entities/{cls}/") for short, cls in classes]


def slug(text: str) -> str:
    """'Checking or savings account' -> 'CheckingOrSavingsAccount'; 'é' -> 'e'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[A-Za-z0-9]+", ascii_text)
    return "".join(w[0].upper() + w[1:] for w in words)


def random_date(rng: random.Random, first: dt.date, last: dt.date) -> dt.date:
    return first + dt.timedelta(days=rng.randrange((last - first).days + 1))


def weighted(rng: random.Random, table: list[tuple]) -> str:
    """Pick the first field of a row, weighted by the row's second field."""
    return rng.choices([row[0] for row in table], [row[1] for row in table])[0]


def unique_ids(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    """Sorted, non-contiguous ids, so that URI tails carry information."""
    return sorted(rng.sample(range(low, high), count))


# --------------------------------------------------------------------------
# hr: Acme Corp HR and org graph
# --------------------------------------------------------------------------

FIRST_NAMES = [
    "Karen", "David", "Priya", "Tomasz", "Aisha", "Lukas", "Mei", "Oliver",
    "Fatima", "Jonas", "Sofia", "Rahul", "Elena", "Marcus", "Yuki", "Grace",
    "Mateo", "Hannah", "Samuel", "Ines", "Noah", "Chloe", "Viktor", "Leila",
    "Daniel", "Amara", "Felix", "Nadia", "Ethan", "Julia", "Omar", "Clara",
    "Benedikt", "Zara", "Henrik", "Lucia", "Arjun", "Maya", "Pavel", "Erin",
]
LAST_NAMES = [
    "Brant", "Okafor", "Lindqvist", "Novak", "Haddad", "Fischer", "Tanaka",
    "Reyes", "Kowalski", "Moreau", "Singh", "Becker", "Costa", "Walsh",
    "Nakamura", "Petrov", "Larsen", "Duarte", "Schmidt", "Osei", "Jensen",
    "Romano", "Adeyemi", "Horvath", "Kim", "Dubois", "Ivanova", "Murphy",
    "Alvarez", "Brennan", "Sato", "Weber", "Mensah", "Ortiz", "Hughes",
    "Varga", "Chen", "Keller", "Nilsen", "Rossi",
]
# key, English label, German label
JOB_TITLES = [
    ("DepartmentHead", "Department Head", "Abteilungsleiter"),
    ("TeamLead", "Team Lead", "Teamleiter"),
    ("SoftwareEngineer", "Software Engineer", "Softwareentwickler"),
    ("QAEngineer", "QA Engineer", "Testingenieur"),
    ("DataAnalyst", "Data Analyst", "Datenanalyst"),
    ("SalesRepresentative", "Sales Representative", "Vertriebsmitarbeiter"),
    ("AccountManager", "Account Manager", "Kundenbetreuer"),
    ("MarketingSpecialist", "Marketing Specialist", "Marketingspezialist"),
    ("Accountant", "Accountant", "Buchhalter"),
    ("FinancialAnalyst", "Financial Analyst", "Finanzanalyst"),
    ("Recruiter", "Recruiter", "Personalvermittler"),
    ("HRGeneralist", "HR Generalist", "Personalreferent"),
    ("LegalCounsel", "Legal Counsel", "Rechtsberater"),
    ("OperationsAnalyst", "Operations Analyst", "Betriebsanalyst"),
    ("SupportAgent", "Support Agent", "Kundendienstmitarbeiter"),
]
# key, label, headcount, salary range, staff titles, skill pool, remote share
DEPARTMENTS = [
    ("ENG", "Engineering", 88, (62000, 148000), ["SoftwareEngineer", "QAEngineer", "DataAnalyst"],
     ["Python", "Java", "SQL", "DataAnalysis", "ProjectManagement"], 0.35),
    ("SAL", "Sales", 60, (41000, 96000), ["SalesRepresentative", "AccountManager"],
     ["Negotiation", "PublicSpeaking", "CustomerService", "Excel"], 0.15),
    ("SUP", "Customer Support", 48, (34000, 61000), ["SupportAgent"],
     ["CustomerService", "Excel", "SQL"], 0.30),
    ("OPS", "Operations", 36, (45000, 99000), ["OperationsAnalyst", "DataAnalyst"],
     ["ProjectManagement", "Excel", "SQL", "DataAnalysis"], 0.10),
    ("MKT", "Marketing", 32, (43000, 92000), ["MarketingSpecialist", "DataAnalyst"],
     ["PublicSpeaking", "DataAnalysis", "Excel"], 0.25),
    ("FIN", "Finance", 26, (52000, 121000), ["Accountant", "FinancialAnalyst"],
     ["Accounting", "Excel", "DataAnalysis"], 0.12),
    ("HRM", "Human Resources", 16, (40000, 84000), ["Recruiter", "HRGeneralist"],
     ["Recruiting", "PublicSpeaking", "Excel"], 0.20),
    ("LEG", "Legal", 14, (68000, 155000), ["LegalCounsel"],
     ["ContractLaw", "Negotiation"], 0.0),
]
SKILLS = {
    "Python": "Python", "Java": "Java", "SQL": "SQL", "DataAnalysis": "Data Analysis",
    "ProjectManagement": "Project Management", "Negotiation": "Negotiation",
    "PublicSpeaking": "Public Speaking", "CustomerService": "Customer Service",
    "Excel": "Excel", "Accounting": "Accounting", "Recruiting": "Recruiting",
    "ContractLaw": "Contract Law",
}
# key, label, city, country, share of staff
OFFICES = [
    ("BER", "Berlin Office", "Berlin", "Germany", 30),
    ("LON", "London Office", "London", "United Kingdom", 25),
    ("NYC", "New York Office", "New York", "United States", 20),
    ("TOR", "Toronto Office", "Toronto", "Canada", 12),
    ("SIN", "Singapore Office", "Singapore", "Singapore", 8),
    ("MAD", "Madrid Office", "Madrid", "Spain", 5),
]
PROJECTS = ["Apollo", "Borealis", "Cobalt", "Delta", "Ember",
            "Falcon", "Granite", "Helix", "Iris", "Juniper"]


def hr_people(rng: random.Random) -> list[dict]:
    """One record per employee: id, name, department, role in the hierarchy."""
    total = sum(d[2] for d in DEPARTMENTS)
    names = [f"{f} {l}" for f in FIRST_NAMES for l in LAST_NAMES]
    rng.shuffle(names)
    ids = iter(unique_ids(rng, total, 1000, 9999))
    people, position = [], 0
    for key, _, size, *_ in DEPARTMENTS:
        leads = max(1, size // 12)
        for rank in range(size):
            role = "head" if rank == 0 else "lead" if rank <= leads else "staff"
            people.append({"id": f"E{next(ids)}", "name": names[position],
                           "dept": key, "role": role})
            position += 1
    return people


def hr_managers(rng: random.Random, people: list[dict]) -> None:
    """Set reportsTo (line manager) and supervisedBy (a different person).

    Both properties exist for every non-head employee and, for staff, they
    always differ: the honeypot question in hr/questions.yaml depends on that.
    """
    for key, *_ in DEPARTMENTS:
        members = [p for p in people if p["dept"] == key]
        head = members[0]
        leads = [p for p in members if p["role"] == "lead"]
        for person in members[1:]:
            if person["role"] == "lead":
                person["reportsTo"] = person["supervisedBy"] = head["id"]
                continue
            person["reportsTo"] = rng.choice(leads)["id"]
            others = [p["id"] for p in leads if p["id"] != person["reportsTo"]]
            person["supervisedBy"] = rng.choice(others) if others else head["id"]


def hr_employee_pairs(rng: random.Random, person: dict, dept: tuple) -> list[tuple[str, str]]:
    key, _, _, (low, high), titles, skills, remote_share = dept
    title = {"head": "DepartmentHead", "lead": "TeamLead"}.get(person["role"])
    offices = [o[0] for o in OFFICES]
    pairs = [
        ("rdfs:label", lit(person["name"])),
        ("hr:email", lit(person["name"].lower().replace(" ", ".") + "@acme.example")),
        ("hr:worksIn", f"dept:{key}"),
        ("hr:basedIn", "office:" + rng.choices(offices, [o[4] for o in OFFICES])[0]),
        ("hr:hasTitle", "title:" + (title or rng.choice(titles))),
        ("hr:hireDate", date(random_date(rng, dt.date(2008, 1, 7), dt.date(2024, 6, 28)))),
        ("hr:salary", decimal(rng.randrange(low * 100, high * 100) / 100)),
        ("hr:remote", boolean(rng.random() < remote_share)),
    ]
    for prop in ("reportsTo", "supervisedBy"):
        if prop in person:
            pairs.append((f"hr:{prop}", f"emp:{person[prop]}"))
    for skill in sorted(rng.sample(skills, rng.randint(1, min(3, len(skills))))):
        pairs.append(("hr:hasSkill", f"skill:{skill}"))
    for project in sorted(rng.sample(PROJECTS, rng.choice([0, 1, 1, 2]))):
        pairs.append(("hr:memberOf", f"project:{project}"))
    return pairs


def hr_reference_data(ttl: Turtle, rng: random.Random) -> None:
    for key, label, size, (low, high), _, _, _ in DEPARTMENTS:
        # Payroll plus 15-45% overheads, rounded to the thousand.
        budget = round(size * (low + high) / 2 * rng.uniform(1.15, 1.45), -3)
        ttl.add(f"dept:{key}", "hr:Department",
                [("rdfs:label", lit(label)), ("hr:budget", decimal(budget))])
    for key, label, city, country, _ in OFFICES:
        ttl.add(f"office:{key}", "hr:Office", [("rdfs:label", lit(label)),
                ("hr:officeCity", lit(city)), ("hr:officeCountry", lit(country))])
    for key, english, german in JOB_TITLES:
        ttl.add(f"title:{key}", "hr:JobTitle",
                [("rdfs:label", lit(english, "en")), ("rdfs:label", lit(german, "de"))])
    for key, label in SKILLS.items():
        ttl.add(f"skill:{key}", "hr:Skill", [("rdfs:label", lit(label))])
    for name in PROJECTS:
        ttl.add(f"project:{name}", "hr:Project", [("rdfs:label", lit(f"Project {name}"))])


def make_hr(path: Path) -> None:
    rng = random.Random(1042)
    ttl = Turtle([("hr", f"{BASE}/hr/vocab/")] + entity_prefixes("hr", [
        ("emp", "Employee"), ("dept", "Department"), ("office", "Office"),
        ("title", "JobTitle"), ("skill", "Skill"), ("project", "Project")]))
    hr_reference_data(ttl, rng)
    people = hr_people(rng)
    hr_managers(rng, people)
    departments = {d[0]: d for d in DEPARTMENTS}
    for person in people:
        pairs = hr_employee_pairs(rng, person, departments[person["dept"]])
        ttl.add(f"emp:{person['id']}", "hr:Employee", pairs)
    ttl.write(path)


# --------------------------------------------------------------------------
# complaints: consumer complaints about financial products
# --------------------------------------------------------------------------

# label, weight, issues.  Credit card is deliberately the most complained-about
# product (the complaints honeypot excludes it).
CFPB_PRODUCTS = [
    ("Credit card", 30, ["Billing dispute", "Fees or interest",
                         "Problem with a purchase shown on your statement",
                         "Closing your account"]),
    ("Debt collection", 17, ["Attempts to collect debt not owed",
                             "Communication tactics", "False statements or representation"]),
    ("Mortgage", 15, ["Trouble during payment process", "Applying for a mortgage",
                      "Struggling to pay mortgage"]),
    ("Checking or savings account", 12, ["Managing an account", "Opening an account",
                                         "Problem caused by your funds being low"]),
    ("Credit reporting", 9, ["Incorrect information on your report",
                             "Improper use of your report"]),
    ("Student loan", 6, ["Dealing with your lender or servicer",
                         "Struggling to repay your loan"]),
    ("Vehicle loan or lease", 5, ["Managing the loan or lease", "Getting a loan or lease"]),
    ("Prepaid card", 4, ["Unauthorized transactions", "Trouble using the card"]),
    ("Payday loan", 2, ["Charged fees or interest you didn't expect",
                        "Can't contact lender"]),
]
# name, relative size, products it offers (by label).  Sizes are spread out so
# the companies ranked 3rd and 4th by complaints are not tied.
CFPB_COMPANIES = [
    ("Northbridge Bank", 10, ["Credit card", "Checking or savings account", "Mortgage",
                              "Vehicle loan or lease"]),
    ("Summit Financial Group", 7, ["Credit card", "Checking or savings account", "Mortgage",
                                   "Student loan"]),
    ("Keystone Credit Union", 4, ["Checking or savings account", "Vehicle loan or lease",
                                  "Credit card", "Mortgage"]),
    ("Harborview Mortgage", 5, ["Mortgage"]),
    ("Pinecrest Card Services", 6, ["Credit card", "Prepaid card"]),
    ("Atlas Recovery Partners", 6, ["Debt collection"]),
    ("Bluewater Savings", 3, ["Checking or savings account", "Mortgage"]),
    ("Crescent Lending", 3, ["Payday loan", "Vehicle loan or lease"]),
    ("Meridian Trust", 2, ["Checking or savings account", "Credit card"]),
    ("Granite State Bank", 2, ["Checking or savings account", "Mortgage", "Credit card"]),
    ("Evergreen Auto Finance", 4, ["Vehicle loan or lease"]),
    ("Lakeshore Servicing", 3, ["Mortgage", "Student loan"]),
    ("Redwood Card Services", 3, ["Credit card", "Prepaid card"]),
    ("Ironclad Collections", 4, ["Debt collection"]),
    ("Silverline Prepaid", 4, ["Prepaid card"]),
    ("Prairie National Bank", 2, ["Checking or savings account", "Credit card",
                                  "Vehicle loan or lease"]),
    ("Cardinal Student Loans", 5, ["Student loan"]),
    ("Beacon Payday Advance", 4, ["Payday loan"]),
    ("Orchard Federal Savings", 1.5, ["Checking or savings account", "Mortgage"]),
    ("Tidewater Credit Bureau", 6, ["Credit reporting"]),
    ("Clearview Credit Reporting", 4, ["Credit reporting"]),
    ("Frontier Consumer Finance", 2, ["Debt collection", "Payday loan", "Vehicle loan or lease"]),
    ("Magnolia Home Loans", 2, ["Mortgage"]),
]
# (name, postal code, weight ~ population in hundreds of thousands)
US_STATES = [
    ("Alabama", "AL", 50), ("Alaska", "AK", 7), ("Arizona", "AZ", 73), ("Arkansas", "AR", 30),
    ("California", "CA", 390), ("Colorado", "CO", 58), ("Connecticut", "CT", 36),
    ("Delaware", "DE", 10), ("Florida", "FL", 222), ("Georgia", "GA", 110), ("Hawaii", "HI", 14),
    ("Idaho", "ID", 19), ("Illinois", "IL", 125), ("Indiana", "IN", 68), ("Iowa", "IA", 32),
    ("Kansas", "KS", 29), ("Kentucky", "KY", 45), ("Louisiana", "LA", 46), ("Maine", "ME", 14),
    ("Maryland", "MD", 62), ("Massachusetts", "MA", 70), ("Michigan", "MI", 100),
    ("Minnesota", "MN", 57), ("Mississippi", "MS", 29), ("Missouri", "MO", 62),
    ("Montana", "MT", 11), ("Nebraska", "NE", 20), ("Nevada", "NV", 32),
    ("New Hampshire", "NH", 14), ("New Jersey", "NJ", 93), ("New Mexico", "NM", 21),
    ("New York", "NY", 196), ("North Carolina", "NC", 108), ("North Dakota", "ND", 8),
    ("Ohio", "OH", 118), ("Oklahoma", "OK", 40), ("Oregon", "OR", 42),
    ("Pennsylvania", "PA", 130), ("Rhode Island", "RI", 11), ("South Carolina", "SC", 53),
    ("South Dakota", "SD", 9), ("Tennessee", "TN", 71), ("Texas", "TX", 305), ("Utah", "UT", 34),
    ("Vermont", "VT", 6), ("Virginia", "VA", 87), ("Washington", "WA", 78),
    ("West Virginia", "WV", 18), ("Wisconsin", "WI", 59), ("Wyoming", "WY", 6),
]
CFPB_CHANNELS = [("Web", 70), ("Referral", 10), ("Phone", 9), ("Postal mail", 6),
                 ("Email", 3), ("Fax", 2)]
CFPB_RESPONSES = [("Closed with explanation", 68), ("Closed with monetary relief", 11),
                  ("Closed with non-monetary relief", 12), ("Closed without relief", 5),
                  ("In progress", 4)]
COMPLAINT_COUNT = 2500


def complaints_reference_data(ttl: Turtle) -> None:
    for label, _, issues in CFPB_PRODUCTS:
        ttl.add(f"fp:{slug(label)}", "cfpb:FinancialProduct", [("rdfs:label", lit(label))])
        for issue in issues:
            ttl.add(f"issue:{slug(label)}-{slug(issue)}", "cfpb:Issue",
                    [("rdfs:label", lit(issue)), ("cfpb:issueUnder", f"fp:{slug(label)}")])
    for name, code, _ in US_STATES:
        ttl.add(f"state:{code}", "cfpb:USState",
                [("rdfs:label", lit(name)), ("cfpb:postalAbbreviation", lit(code))])
    for index, (name, _, _) in enumerate(CFPB_COMPANIES):
        hq = US_STATES[(index * 17 + 4) % len(US_STATES)][1]  # spread over the states
        ttl.add(f"co:{slug(name)}", "cfpb:Company",
                [("rdfs:label", lit(name)), ("cfpb:headquarteredIn", f"state:{hq}")])
    for label, _ in CFPB_CHANNELS:
        ttl.add(f"channel:{slug(label)}", "cfpb:SubmissionChannel", [("rdfs:label", lit(label))])
    for label, _ in CFPB_RESPONSES:
        ttl.add(f"resp:{slug(label)}", "cfpb:ResponseType", [("rdfs:label", lit(label))])


def complaint_pairs(rng: random.Random, received: dt.date) -> list[tuple[str, str]]:
    """Triples of one complaint. Monetary relief is always timely and below $10,000."""
    product = weighted(rng, [(p[0], p[1]) for p in CFPB_PRODUCTS])
    issues = next(p[2] for p in CFPB_PRODUCTS if p[0] == product)
    company = weighted(rng, [(c[0], c[1]) for c in CFPB_COMPANIES if product in c[2]])
    response = weighted(rng, CFPB_RESPONSES)
    relief = response == "Closed with monetary relief"
    pairs = [
        ("cfpb:aboutProduct", f"fp:{slug(product)}"),
        ("cfpb:concernsIssue", f"issue:{slug(product)}-{slug(rng.choice(issues))}"),
        ("cfpb:againstCompany", f"co:{slug(company)}"),
        ("cfpb:filedFromState", "state:" + weighted(rng, [(s[1], s[2]) for s in US_STATES])),
        ("cfpb:receivedVia", "channel:" + slug(weighted(rng, CFPB_CHANNELS))),
        ("cfpb:dateReceived", date(received)),
        ("cfpb:companyResponse", f"resp:{slug(response)}"),
        ("cfpb:timelyResponse", boolean(relief or rng.random() < 0.92)),
        ("cfpb:consumerDisputed", boolean(response != "In progress" and rng.random() < 0.14)),
    ]
    if relief:
        pairs.append(("cfpb:reliefAmount", decimal(rng.randrange(2500, 950000) / 100)))
    return pairs


def make_complaints(path: Path) -> None:
    rng = random.Random(2023)
    ttl = Turtle([("cfpb", f"{BASE}/complaints/vocab/")] + entity_prefixes("complaints", [
        ("cc", "ConsumerComplaint"), ("fp", "FinancialProduct"), ("issue", "Issue"),
        ("co", "Company"), ("state", "USState"), ("channel", "SubmissionChannel"),
        ("resp", "ResponseType")]))
    complaints_reference_data(ttl)
    # Complaint numbers grow with the date received, as in a real intake system.
    numbers = unique_ids(rng, COMPLAINT_COUNT, 3_000_000, 4_000_000)
    dates = sorted(random_date(rng, dt.date(2021, 1, 1), dt.date(2024, 12, 31))
                   for _ in numbers)
    for number, received in zip(numbers, dates):
        ttl.add(f"cc:{number}", "cfpb:ConsumerComplaint", complaint_pairs(rng, received))
    ttl.write(path)


# --------------------------------------------------------------------------
# catalogue: product catalogue with English and German names
# --------------------------------------------------------------------------

# key, English, German, parent key
CATEGORIES = [
    ("HomeKitchen", "Home & Kitchen", "Haus & Küche", None),
    ("KitchenAppliances", "Kitchen Appliances", "Küchengeräte", "HomeKitchen"),
    ("Cookware", "Cookware", "Kochgeschirr", "HomeKitchen"),
    ("Garden", "Garden", "Garten", None),
    ("GardenTools", "Garden Tools", "Gartenwerkzeuge", "Garden"),
    ("OutdoorFurniture", "Outdoor Furniture", "Gartenmöbel", "Garden"),
    ("Electronics", "Electronics", "Elektronik", None),
    ("AudioHiFi", "Audio & Hi-Fi", "Audio & HiFi", "Electronics"),
    ("ComputerAccessories", "Computer Accessories", "Computerzubehör", "Electronics"),
    ("Sports", "Sports & Outdoors", "Sport & Freizeit", None),
    ("Fitness", "Fitness", "Fitness", "Sports"),
    ("Cycling", "Cycling", "Radsport", "Sports"),
    ("Toys", "Toys & Games", "Spielwaren", None),
    ("BoardGames", "Board Games", "Brettspiele", "Toys"),
    ("BuildingToys", "Building Toys", "Bauspielzeug", "Toys"),
]
# leaf category -> [(English noun, German noun, price range in EUR, weight range in grams)]
PRODUCT_KINDS = {
    "KitchenAppliances": [("Kettle", "Wasserkocher", (19, 89), (700, 1600)),
                          ("Toaster", "Toaster", (24, 129), (900, 2500)),
                          ("Blender", "Standmixer", (39, 349), (1800, 5200)),
                          ("Coffee Grinder", "Kaffeemühle", (29, 219), (600, 2400))],
    "Cookware": [("Frying Pan", "Bratpfanne", (15, 119), (800, 2200)),
                 ("Stock Pot", "Suppentopf", (25, 159), (1500, 4000)),
                 ("Knife Set", "Messerset", (35, 289), (900, 3000))],
    "GardenTools": [("Hedge Trimmer", "Heckenschere", (45, 329), (2100, 5000)),
                    ("Pruning Shears", "Gartenschere", (9, 59), (180, 400)),
                    ("Lawn Mower", "Rasenmäher", (149, 1290), (9000, 32000))],
    "OutdoorFurniture": [("Garden Chair", "Gartenstuhl", (29, 189), (3000, 9000)),
                         ("Patio Table", "Terrassentisch", (89, 749), (8000, 30000)),
                         ("Sun Lounger", "Sonnenliege", (59, 459), (6000, 18000))],
    "AudioHiFi": [("Bluetooth Speaker", "Bluetooth-Lautsprecher", (25, 399), (300, 3500)),
                  ("Headphones", "Kopfhörer", (19, 449), (150, 400)),
                  ("Soundbar", "Soundbar", (89, 999), (2000, 7000))],
    "ComputerAccessories": [("Keyboard", "Tastatur", (15, 189), (400, 1300)),
                            ("Mouse", "Maus", (9, 129), (60, 160)),
                            ("USB Hub", "USB-Hub", (12, 79), (50, 300))],
    "Fitness": [("Yoga Mat", "Yogamatte", (12, 89), (800, 2500)),
                ("Dumbbell Set", "Hantelset", (29, 259), (5000, 40000)),
                ("Rowing Machine", "Rudergerät", (249, 1690), (25000, 60000))],
    "Cycling": [("Bike Helmet", "Fahrradhelm", (29, 239), (250, 450)),
                ("Bike Light", "Fahrradlicht", (9, 99), (60, 250)),
                ("Bike Lock", "Fahrradschloss", (14, 129), (400, 2000))],
    "BoardGames": [("Strategy Game", "Strategiespiel", (19, 79), (900, 2500)),
                   ("Family Game", "Familienspiel", (12, 49), (600, 1500))],
    "BuildingToys": [("Building Set", "Bauset", (14, 229), (300, 4000)),
                     ("Marble Run", "Murmelbahn", (24, 149), (900, 3500))],
}
# name, country
BRANDS = [("Alvora", "Germany"), ("Brenner", "Germany"), ("Castell", "Italy"),
          ("Dornfeld", "Austria"), ("Eskara", "Spain"), ("Falkwerk", "Germany"),
          ("Gravita", "Italy"), ("Holmberg", "Sweden"), ("Isarline", "Germany"),
          ("Juvento", "Portugal"), ("Kestrel", "United Kingdom"), ("Lumio", "Denmark")]
SUPPLIERS = [("Baltic Trade Sp. z o.o.", "Poland"), ("Rheinland Logistik GmbH", "Germany"),
             ("Shenzhen Brightway Ltd", "China"), ("Saigon Goods JSC", "Vietnam"),
             ("Morava Supply s.r.o.", "Czechia"), ("Lombardia Forniture S.p.A.", "Italy"),
             ("Vistula Components S.A.", "Poland"), ("Anatolia Export A.S.", "Turkey")]
WAREHOUSES = [("HAM", "Hamburg Distribution Centre", "Hamburg"),
              ("RTM", "Rotterdam Hub", "Rotterdam"),
              ("LYS", "Lyon Depot", "Lyon"),
              ("POZ", "Poznan Fulfilment Centre", "Poznan")]
PRODUCT_COUNT = 420


def catalogue_reference_data(ttl: Turtle) -> None:
    for key, english, german, parent in CATEGORIES:
        pairs = [("rdfs:label", lit(english, "en")), ("rdfs:label", lit(german, "de"))]
        if parent:
            pairs.append(("cat:subCategoryOf", f"category:{parent}"))
        ttl.add(f"category:{key}", "cat:Category", pairs)
    for name, country in BRANDS:
        ttl.add(f"brand:{slug(name)}", "cat:Brand",
                [("rdfs:label", lit(name)), ("cat:brandCountry", lit(country))])
    for index, (name, country) in enumerate(SUPPLIERS, start=1):
        ttl.add(f"supplier:S{index:02d}", "cat:Supplier",
                [("rdfs:label", lit(name)), ("cat:supplierCountry", lit(country))])
    for key, name, city in WAREHOUSES:
        ttl.add(f"warehouse:{key}", "cat:Warehouse",
                [("rdfs:label", lit(name)), ("cat:warehouseCity", lit(city))])


def product_pairs(rng: random.Random, model: str) -> list[tuple[str, str]]:
    """One product: 'Alvora Kettle K214'@en / 'Alvora Wasserkocher K214'@de."""
    category = rng.choice(sorted(PRODUCT_KINDS))
    english, german, (low, high), (light, heavy) = rng.choice(PRODUCT_KINDS[category])
    brand = rng.choice(BRANDS)[0]
    discontinued = rng.random() < 0.08
    price = rng.randrange(low, high) + rng.choice([0.99, 0.95, 0.49, 0.0])
    return [
        ("rdfs:label", lit(f"{brand} {english} {model}", "en")),
        ("rdfs:label", lit(f"{brand} {german} {model}", "de")),
        ("cat:inCategory", f"category:{category}"),
        ("cat:madeBy", f"brand:{slug(brand)}"),
        ("cat:suppliedBy", f"supplier:S{rng.randrange(len(SUPPLIERS)) + 1:02d}"),
        ("cat:price", decimal(price)),
        ("cat:stockLevel", integer(0 if discontinued else rng.randrange(0, 600))),
        ("cat:storedIn", "warehouse:" + rng.choice(WAREHOUSES)[0]),
        ("cat:launchDate", date(random_date(rng, dt.date(2016, 3, 1), dt.date(2024, 11, 30)))),
        ("cat:discontinued", boolean(discontinued)),
        ("cat:weightGrams", integer(rng.randrange(light, heavy))),
    ]


def make_catalogue(path: Path) -> None:
    rng = random.Random(4242)
    ttl = Turtle([("cat", f"{BASE}/catalogue/vocab/")] + entity_prefixes("catalogue", [
        ("product", "Product"), ("category", "Category"), ("brand", "Brand"),
        ("supplier", "Supplier"), ("warehouse", "Warehouse")]))
    catalogue_reference_data(ttl)
    models = rng.sample(range(100, 1000), PRODUCT_COUNT)
    for number, model in zip(unique_ids(rng, PRODUCT_COUNT, 1, 10000), models):
        letter = "KLMRSTVXZ"[model % 9]
        ttl.add(f"product:P-{number:04d}", "cat:Product", product_pairs(rng, f"{letter}{model}"))
    ttl.write(path)


# --------------------------------------------------------------------------
# trials: clinical-trials registry with English and French condition names
# --------------------------------------------------------------------------

# key, English, French, weight
CONDITIONS = [
    ("T2D", "Type 2 Diabetes", "Diabète de type 2", 14),
    ("ASTHMA", "Asthma", "Asthme", 9),
    ("HTN", "Hypertension", "Hypertension artérielle", 10),
    ("BRCA", "Breast Cancer", "Cancer du sein", 12),
    ("AD", "Alzheimer's Disease", "Maladie d'Alzheimer", 7),
    ("RA", "Rheumatoid Arthritis", "Polyarthrite rhumatoïde", 7),
    ("MDD", "Major Depressive Disorder", "Trouble dépressif majeur", 8),
    ("CKD", "Chronic Kidney Disease", "Maladie rénale chronique", 6),
    ("PSO", "Psoriasis", "Psoriasis", 5),
    ("HF", "Heart Failure", "Insuffisance cardiaque", 8),
    ("COPD", "Chronic Obstructive Pulmonary Disease",
     "Bronchopneumopathie chronique obstructive", 6),
    ("MIG", "Migraine", "Migraine", 4),
    ("PD", "Parkinson's Disease", "Maladie de Parkinson", 4),
]
# name, intervention type, conditions it is tested for
INTERVENTIONS = [
    ("Glucorin", "Drug", ["T2D"]), ("Metavance", "Drug", ["T2D", "CKD"]),
    ("Bronchilex", "Drug", ["ASTHMA", "COPD"]), ("AirSense Inhaler", "Device", ["ASTHMA", "COPD"]),
    ("Vasotrel", "Drug", ["HTN", "HF"]), ("CardioPatch", "Device", ["HF", "HTN"]),
    ("Oncumab", "Biological", ["BRCA"]), ("Tamorexin", "Drug", ["BRCA"]),
    ("Neurovia", "Drug", ["AD", "PD"]), ("Memora Coaching", "Behavioral", ["AD", "MDD"]),
    ("Artheza", "Biological", ["RA", "PSO"]), ("Jointrel", "Drug", ["RA"]),
    ("Seralin", "Drug", ["MDD", "MIG"]), ("MoodTrack App", "Behavioral", ["MDD"]),
    ("Renoxal", "Drug", ["CKD"]), ("Dermaclear", "Biological", ["PSO"]),
    ("Cephalix", "Drug", ["MIG"]), ("Dopastim", "Device", ["PD"]),
]
# name, class
SPONSORS = [
    ("Halvorsen Pharma", "Industry"), ("Meridian Biotherapeutics", "Industry"),
    ("Novacura AG", "Industry"), ("Brightwell Medical Devices", "Industry"),
    ("Castellan Therapeutics", "Industry"), ("Université de Lyon", "Academic"),
    ("Karolinska Research Foundation", "Academic"), ("Boston Clinical Trials Network", "Academic"),
    ("Charité Research Unit", "Academic"), ("National Heart Institute", "Government"),
]
# key, name, city, country
SITES = [
    ("LYON1", "Hôpital Édouard Herriot", "Lyon", "France"),
    ("PARIS1", "Hôpital Saint-Antoine", "Paris", "France"),
    ("MARS1", "Hôpital de la Timone", "Marseille", "France"),
    ("BERL1", "Charité Campus Mitte", "Berlin", "Germany"),
    ("MUNI1", "Klinikum Schwabing", "Munich", "Germany"),
    ("STOC1", "Karolinska University Hospital", "Stockholm", "Sweden"),
    ("MADR1", "Hospital Clínico San Carlos", "Madrid", "Spain"),
    ("MILA1", "Ospedale Niguarda", "Milan", "Italy"),
    ("LOND1", "St Bartholomew's Hospital", "London", "United Kingdom"),
    ("BOST1", "Boston General Hospital", "Boston", "United States"),
    ("HOUS1", "Houston Methodist Research Institute", "Houston", "United States"),
    ("TORO1", "Toronto Western Hospital", "Toronto", "Canada"),
    ("TOKY1", "Tokyo Medical Centre", "Tokyo", "Japan"),
    ("SYDN1", "Royal Prince Alfred Hospital", "Sydney", "Australia"),
]
# phase, weight, enrollment range.  Phase 1 stays small (the empty question
# relies on it); nothing reaches 5,000 (an ASK relies on it); phase 3 and 4
# straddle 750 and 1,000 (the threshold honeypot relies on it).
PHASES = [("Phase 1", 15, (18, 120)), ("Phase 2", 30, (60, 640)),
          ("Phase 3", 40, (300, 3400)), ("Phase 4", 15, (200, 2600))]
TRIAL_COUNT = 240


def trials_reference_data(ttl: Turtle) -> None:
    for key, english, french, _ in CONDITIONS:
        ttl.add(f"condition:{key}", "ct:Condition",
                [("rdfs:label", lit(english, "en")), ("rdfs:label", lit(french, "fr"))])
    for name, kind, _ in INTERVENTIONS:
        ttl.add(f"intervention:{slug(name)}", "ct:Intervention",
                [("rdfs:label", lit(name)), ("ct:interventionType", lit(kind))])
    for name, kind in SPONSORS:
        ttl.add(f"sponsor:{slug(name)}", "ct:Sponsor",
                [("rdfs:label", lit(name)), ("ct:sponsorClass", lit(kind))])
    for key, name, city, country in SITES:
        ttl.add(f"site:{key}", "ct:Site", [("rdfs:label", lit(name)),
                ("ct:siteCity", lit(city)), ("ct:siteCountry", lit(country))])


# last start year of the era, (status, weight) rows: older trials are mostly
# finished, recent ones mostly recruiting.
TRIAL_STATUS_BY_ERA = [
    (2019, [("Completed", 85), ("Terminated", 15)]),
    (2022, [("Completed", 45), ("Active, not recruiting", 45), ("Terminated", 10)]),
    (9999, [("Recruiting", 70), ("Not yet recruiting", 15), ("Active, not recruiting", 15)]),
]


def trial_status(rng: random.Random, start: dt.date) -> str:
    table = next(rows for last, rows in TRIAL_STATUS_BY_ERA if start.year <= last)
    return weighted(rng, table)


def trial_pairs(rng: random.Random, start: dt.date) -> list[tuple[str, str]]:
    condition = weighted(rng, [(c[0], c[3]) for c in CONDITIONS])
    english = next(c[1] for c in CONDITIONS if c[0] == condition)
    drug = rng.choice([i[0] for i in INTERVENTIONS if condition in i[2]])
    phase, _, (low, high) = rng.choices(PHASES, [p[1] for p in PHASES])[0]
    status = trial_status(rng, start)
    design = rng.choice(["Randomized, Double-Blind", "Open-Label", "Placebo-Controlled",
                         "Randomized, Multicentre"])
    pairs = [
        ("rdfs:label", lit(f"A {phase}, {design} Study of {drug} in Adults with {english}")),
        ("ct:studiesCondition", f"condition:{condition}"),
        ("ct:testsIntervention", f"intervention:{slug(drug)}"),
        ("ct:sponsoredBy", "sponsor:" + slug(rng.choice(SPONSORS)[0])),
        ("ct:phase", lit(phase)),
        ("ct:enrollment", integer(rng.randrange(low, high))),
        ("ct:startDate", date(start)),
        ("ct:overallStatus", lit(status)),
        ("ct:hasResults", boolean(status == "Completed" and rng.random() < 0.7)),
    ]
    for site in sorted(rng.sample([s[0] for s in SITES], rng.randint(1, 4))):
        pairs.append(("ct:conductedAt", f"site:{site}"))
    return pairs


def make_trials(path: Path) -> None:
    rng = random.Random(750)
    ttl = Turtle([("ct", f"{BASE}/trials/vocab/")] + entity_prefixes("trials", [
        ("trial", "Trial"), ("condition", "Condition"), ("intervention", "Intervention"),
        ("sponsor", "Sponsor"), ("site", "Site")]))
    trials_reference_data(ttl)
    # Registry numbers grow with the start date, as NCT numbers roughly do.
    numbers = unique_ids(rng, TRIAL_COUNT, 1_000_000, 6_000_000)
    starts = sorted(random_date(rng, dt.date(2014, 1, 1), dt.date(2024, 10, 31))
                    for _ in numbers)
    for number, start in zip(numbers, starts):
        ttl.add(f"trial:NCT0{number:07d}", "ct:Trial", trial_pairs(rng, start))
    ttl.write(path)


def main() -> None:
    make_hr(HERE / "hr" / "kg.ttl")
    make_complaints(HERE / "complaints" / "kg.ttl")
    make_catalogue(HERE / "catalogue" / "kg.ttl")
    make_trials(HERE / "trials" / "kg.ttl")


if __name__ == "__main__":
    main()
