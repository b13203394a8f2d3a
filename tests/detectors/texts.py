"""Realistic answers shared by the detector tests: normal ones must stay quiet."""

from __future__ import annotations

PROSE = """\
Connection pooling matters most when each request opens a new TCP connection to the database.
Opening a connection costs a round trip for the handshake, another for TLS, and then the
authentication exchange, so a request that runs a 2 ms query can spend 30 ms just getting ready.

A pool keeps a small number of connections open and lends them out. The two settings that
matter are the pool size and the timeout for borrowing a connection. If the pool is too small,
requests queue behind each other and latency rises under load; if it is too large, the database
spends its memory on idle sessions and may refuse new ones.

A good starting point is to size the pool to the number of worker threads, measure the wait
time for a connection at p95, and grow the pool only when that wait is a noticeable share of the
request time. Also set a maximum lifetime so that connections are recycled after failovers.
"""

CODE_BLOCK = """\
Here is a minimal script that warms the cache by requesting the same endpoint several times:

```python
import requests

session = requests.Session()
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
session.get("https://example.com/api/health")
```

In practice you would use a loop, but spelling the calls out makes the timing easier to read.
"""

CODE_BLOCK_AT_END = """\
The test fixture below fills the matrix row by row:

```c
int grid[8][8] = {
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0},
};
```"""

TABLE = """\
Quarterly revenue by region (in millions of USD):

| Region        | Q1   | Q2   | Q3   | Q4   |
|---------------|------|------|------|------|
| North America | 12.4 | 13.1 | 13.9 | 15.2 |
| Europe        | 8.7  | 9.0  | 9.4  | 10.1 |
| Asia Pacific  | 6.3  | 6.9  | 7.8  | 8.5  |
| Latin America | 2.1  | 2.2  | 2.4  | 2.6  |
| Middle East   | 1.4  | 1.5  | 1.5  | 1.7  |
| Africa        | 0.8  | 0.9  | 0.9  | 1.0  |
| Total         | 31.7 | 33.6 | 35.9 | 39.1 |
"""

NUMERIC_TABLE = """\
| step | loss  | accuracy |
|------|-------|----------|
| 100  | 2.314 | 0.112    |
| 200  | 1.987 | 0.245    |
| 300  | 1.652 | 0.388    |
| 400  | 1.411 | 0.502    |
| 500  | 1.209 | 0.577    |
| 600  | 1.088 | 0.623    |
| 700  | 0.996 | 0.651    |
| 800  | 0.931 | 0.672    |
| 900  | 0.887 | 0.688    |
| 1000 | 0.859 | 0.697    |
"""

SIMILAR_BULLETS = """\
To make the onboarding flow faster, consider the following changes:

- Improve the signup form by removing the optional company field.
- Improve the signup form by validating the email address inline.
- Improve the welcome email by linking directly to the first project.
- Improve the welcome email by adding a short video walkthrough.
- Improve the dashboard by showing a checklist of the first three tasks.
- Improve the dashboard by hiding advanced settings until they are needed.
- Improve the billing page by explaining the free tier limits up front.
- Improve the billing page by allowing annual plans without contacting sales.
- Improve the documentation by adding a quickstart for each SDK.
- Improve the documentation by adding copy buttons to every code sample.
"""

TRAINING_PLAN = """\
Here is a gentle eight-week plan to build up to a 10 km run:

- Week 1: run 3 km, three times a week
- Week 2: run 4 km, three times a week
- Week 3: run 4 km, four times a week
- Week 4: run 5 km, four times a week
- Week 5: run 6 km, three times a week
- Week 6: run 7 km, three times a week
- Week 7: run 8 km, three times a week
- Week 8: run 10 km, twice a week
"""

PRIMES = (
    "The primes below 300 are: "
    "2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, "
    "89, 97, 101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179, "
    "181, 191, 193, 197, 199, 211, 223, 227, 229, 233, 239, 241, 251, 257, 263, 269, 271, 277, "
    "281, 283, 293"
)

ERROR_RATES = (
    "Hourly error rates over the last two days, oldest first: "
    "0.2%, 0.1%, 0.3%, 0.1%, 0.4%, 0.4%, 0.4%, 0.4%, 0.2%, 0.1%, 0.4%, 0.1%, 0.4%, 0.4%, 0.1%, "
    "0.4%, 0.3%, 0.2%, 0.1%, 0.3%, 0.1%, 0.1%, 0.1%, 0.1%, 0.2%, 0.2%, 0.3%, 0.1%, 0.4%, 0.2%, "
    "0.1%, 0.1%, 0.3%, 0.2%, 0.4%, 0.1%, 0.1%, 0.2%, 0.3%, 0.1%, 0.2%, 0.4%, 0.1%, 0.1%, 0.2%, "
    "0.3%, 0.1%, 0.2%."
)

CSV = """\
date,requests,errors
2024-03-01,18234,12
2024-03-02,17901,9
2024-03-03,15022,31
2024-03-04,19877,4
2024-03-05,20113,7
2024-03-06,21450,11
2024-03-07,16543,6
2024-03-08,18001,15
2024-03-09,14990,3
2024-03-10,15876,8"""

JSON_RECORDS = """\
[
  {"name": "Alice", "role": "admin", "active": true},
  {"name": "Bob", "role": "viewer", "active": true},
  {"name": "Carol", "role": "editor", "active": false},
  {"name": "Dan", "role": "viewer", "active": true},
  {"name": "Erin", "role": "editor", "active": true},
  {"name": "Frank", "role": "viewer", "active": false},
  {"name": "Grace", "role": "admin", "active": true}
]"""

FAQ = """\
Q: How do I reset my password?
A: Open Settings, choose Security, and click "Reset password". You will get an email link.

Q: How do I change my email address?
A: Open Settings, choose Profile, and edit the email field. We send a confirmation to both addresses.

Q: How do I delete my account?
A: Open Settings, choose Account, and click "Delete account". Deletion is final after 30 days.

Q: How do I export my data?
A: Open Settings, choose Privacy, and click "Export". The archive arrives by email within an hour.
"""

CHINESE = """\
缓存的作用是减少重复计算。当同一个请求在短时间内多次出现时，服务可以直接返回上一次的结果，
而不必再次访问数据库。设置缓存时需要考虑过期时间：时间太短，命中率低；时间太长，数据可能过时。
通常的做法是根据数据的更新频率来选择过期时间，并在数据更新时主动清除相关的缓存条目。
"""

NORMAL_TEXTS = {
    "prose": PROSE,
    "code_block": CODE_BLOCK,
    "code_block_at_end": CODE_BLOCK_AT_END,
    "table": TABLE,
    "numeric_table": NUMERIC_TABLE,
    "similar_bullets": SIMILAR_BULLETS,
    "training_plan": TRAINING_PLAN,
    "primes": PRIMES,
    "error_rates": ERROR_RATES,
    "csv": CSV,
    "json_records": JSON_RECORDS,
    "faq": FAQ,
    "chinese": CHINESE,
}
