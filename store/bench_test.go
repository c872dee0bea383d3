package store

func cleanupBenchFixtures() {}
