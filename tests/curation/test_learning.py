"""The learning curve replays the held-out rounds in the order they were collected."""

from __future__ import annotations

from denpex.evaluation.learning import rounds_of
from tests.conftest import REPO


def test_the_rounds_come_from_the_held_out_case_table_in_order() -> None:
    rounds = rounds_of(REPO / "evals" / "heldout")
    assert {name: len(cases) for name, cases in rounds.items()} == {
        "1": 25,
        "2": 25,
        "3": 24,
        "4": 22,
        "5": 8,
        "5x": 6,
        "7": 30,
        "8": 30,
        "9": 30,
        "10": 30,
        "11": 29,
        "12": 29,
        "13": 30,
        "14": 19,
        "15": 30,
        "16": 17,
        "17": 20,
        "18": 20,
        "19": 21,
        "20": 15,
        "21": 15,
        "22": 15,
        "23": 16,
        "24": 16,
        "25": 16,
        "26": 15,
        "27": 16,
        "28": 16,
        "29": 12,
        "30": 9,
        "31": 6,
        "32": 7,
        "33": 10,
        "34": 4,
        "35": 6,
        "36": 4,
        "37": 6,
        "38": 4,
        "39": 4,
        "40": 9,
        "41": 6,
        "42": 9,
        "43": 5,
        "44": 6,
        "45": 9,
        "46": 4,
        "47": 3,
        "48": 7,
        "49": 4,
        "50": 6,
        "51": 6,
        "52": 8,
        "53": 3,
        "54": 5,
    }
    assert REPO / "evals" / "heldout" / "issue-azure-az-hop-1210" in rounds["5"]
