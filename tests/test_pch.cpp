// Compiles tests/test_pch.h once for every test target (tests/CMakeLists.txt, gptoss_test_pch).
