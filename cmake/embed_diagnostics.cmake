# Builds docs/diagnostics.md into hipguard (the help text of SARIF rules), so
# the diagnostic texts are written in one place:
#   cmake -DIN=docs/diagnostics.md -DOUT=diagnostics_docs.cpp -P embed_diagnostics.cmake
file(READ "${IN}" text)
string(FIND "${text}" ")hgdoc\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )hgdoc\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from docs/diagnostics.md by cmake/embed_diagnostics.cmake: do not edit.\n"
  "#include <string_view>\n\n"
  "namespace hipguard {\n"
  "std::string_view diagnostics_markdown() {\n"
  "  static constexpr char kText[] = R\"hgdoc(${text})hgdoc\";\n"
  "  return {kText, sizeof kText - 1};\n"
  "}\n"
  "}  // namespace hipguard\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
