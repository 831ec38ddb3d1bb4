-- wrk script for BenchmarkServerUnderWrk/body=2B: a POST of a small JSON
-- body.
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
