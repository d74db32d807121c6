# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE).
if(CPACK_GENERATOR STREQUAL "TGZ")
  set(CPACK_STRIP_FILES ON)  # the .deb strips through its dbgsym package instead
endif()
