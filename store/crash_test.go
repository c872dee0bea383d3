package store

const childEnv = "LOOP_STORE_TEST_CHILD"

func runChild(role string) int { return 2 }
