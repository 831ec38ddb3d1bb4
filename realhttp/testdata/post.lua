-- wrk script for BenchmarkServerUnderWrk: POST a small JSON body, as the
-- real-HTTP driver does.
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
