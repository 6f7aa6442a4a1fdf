# Runs one module of CPython's own test suite (Debian's libpython3.11-testsuite) with unittest
# and prints each case's outcome as JSON after a marker line. The same file runs on the bare
# interpreter and, as a child interpreter the step starts, inside the sandbox (the `test`
# package is not in sys.stdlib_module_names, so the step itself may not import it).
import json
import signal
import sys
import unittest

from test import support
# Resource-gated tests: never "network" or "urlfetch" (they would reach the internet), nor
# "largefile" or "cpu" (slow); the rest run.
support.use_resources = ["subprocess", "decimal", "tzdata"]
name = sys.argv[1]
outcomes = {}


class Result(unittest.TestResult):
    def startTest(self, test):
        super().startTest(test)
        signal.setitimer(signal.ITIMER_REAL, 60)
    def stopTest(self, test):
        signal.setitimer(signal.ITIMER_REAL, 0)
        super().stopTest(test)

    def addSuccess(self, test):
        outcomes.setdefault(test.id(), "ok")

    def addFailure(self, test, err):
        self.failed(test, err)

    def addError(self, test, err):
        self.failed(test, err)

    def addSkip(self, test, reason):
        outcomes[test.id()] = "skip"

    def addExpectedFailure(self, test, err):
        outcomes[test.id()] = "ok"

    def addUnexpectedSuccess(self, test):
        outcomes[test.id()] = "fail"

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self.failed(test, err)

    def failed(self, test, err):
        outcomes[test.id()] = "fail"
        sys.stderr.write("%s: %s\n" % (test.id(), self._exc_info_to_string(err, test)[-600:]))


def timeout(*_):
    raise TimeoutError("the test case took over 60 s")


signal.signal(signal.SIGALRM, timeout)
suite = unittest.defaultTestLoader.loadTestsFromName("test." + name)
suite.run(Result())
sys.stdout.write("\n@@RESULTS@@" + json.dumps(outcomes) + "\n")
