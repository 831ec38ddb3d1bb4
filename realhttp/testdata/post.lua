-- wrk script for BenchmarkServerUnderWrk/body=none: a POST without a
-- body, as the real-HTTP driver sends its attempts.
wrk.method = "POST"
