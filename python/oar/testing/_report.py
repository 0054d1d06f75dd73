"""What the op suite's and the conformance suite's reports share: results whose status is PASS, FAIL or SKIP."""


class ReportBase:
    def __init__(self):
        self.results = []
        self.seconds = 0.0

    @property
    def ok(self):
        return not any(r.status == "FAIL" for r in self.results)

    def counts(self):
        c = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        for r in self.results:
            c[r.status] += 1
        return c
