//! B6, R1.4: capability maps loaded at run time in the source document's YAML shape — for tools
//! discovered at run time, e.g. from an MCP server's manifest.

use agent_circuit_breaker::{
    CapabilityMap, Expeditor,
    capability::{MapError, Severity},
};

/// The source document's capability map, as it writes it, plus the Edit tool it names.
const SEED_YAML: &str = r#"
capability_map:
  - tool: Grep
    provides: content search across files
    alternatives:
      - tool: Bash
        method: "rg or grep command"
        degradation: "loses Grep's built-in output formatting"
      - tool: Read
        method: "read suspected files directly"
        degradation: "requires knowing which files to check; no broad search"
        severity: high
    fallback: "ask the user which files to examine"

  - tool: Bash
    provides: command execution, build tools, git operations
    alternatives: []
    fallback: "report commands that need to be run manually"

  - tool: Read
    provides: file content inspection
    alternatives:
      - tool: Bash
        method: "cat or head command"
        degradation: "loses line numbering and truncation safety"
    fallback: "ask the user to paste file contents"

  - tool: Write
    provides: file creation
    alternatives:
      - tool: Edit
        method: "create via full-file edit"
        degradation: "requires file to already exist for Edit"
      - tool: Bash
        method: "echo/cat heredoc"
        degradation: "loses Write's atomic file creation"
    fallback: "output file contents for the user to save manually"

  - tool: WebSearch
    provides: external information retrieval
    alternatives: []
    fallback: "state what information is needed; ask user to provide it"
"#;

const EDIT_YAML: &str = r#"
  - tool: Edit
    provides: in-place file modification
    alternatives:
      - tool: Write
        method: "rewrite the whole file"
    fallback: "describe the edit for the user to apply"
"#;

#[test]
fn b6_the_source_documents_yaml_map_loads_and_is_checked() {
    // As the source document writes it, Write names Edit, which it never declares (R1.4).
    let map: CapabilityMap =
        serde_yaml_ng::from_str(SEED_YAML).expect("the source document's YAML shape");
    assert_eq!(map.tools().len(), 5);
    let errors = map.validate().expect_err("Edit is not declared");
    assert_eq!(
        errors.problems(),
        [MapError::UnknownAlternative {
            tool: "Write".into(),
            alternative: "Edit".into(),
            suggestion: None,
        }]
    );
    assert!(Expeditor::new(map).is_err());

    let full: CapabilityMap =
        serde_yaml_ng::from_str(&format!("{SEED_YAML}{EDIT_YAML}")).expect("with Edit");
    full.validate().expect("a complete map");
    let grep = full.get("Grep").unwrap();
    assert_eq!(
        grep.alternatives()[1].degradation().severity(),
        Severity::High
    );
    // An alternative with no degradation reads as unknown and is kept (R1.2).
    let edit = full.get("Edit").unwrap();
    assert_eq!(
        edit.alternatives()[0].degradation().to_string(),
        "unknown — test before relying on this route"
    );
    let critical: Vec<&str> = full.critical().map(|t| t.name()).collect();
    assert_eq!(critical, ["Bash", "WebSearch"]);
    let expeditor = Expeditor::new(full.clone()).expect("valid");
    assert_eq!(expeditor.capability_map(), full);
    // And back to YAML in the same shape.
    let again: CapabilityMap =
        serde_yaml_ng::from_str(&serde_yaml_ng::to_string(&full).unwrap()).unwrap();
    assert_eq!(again, full);
}
