//! B18: tool definitions in the shapes model APIs accept, with call ids. Each API's tool, the
//! model's call read from its response, and the message answering it, checked against:
//!
//! - OpenAI (chat completions and Responses): the definitions OpenAI publishes for its request
//!   and response bodies, restated in `schemas/openai.json` (its `$comment` names the source),
//!   validated with `jsonschema`; and strict mode's rules
//!   (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>), with
//!   arguments that fit the strict schema checked to be taken by the dispatcher;
//! - Anthropic (no schema of its request body is published): the rules of
//!   <https://docs.anthropic.com/en/docs/build-with-claude/tool-use/implement-tool-use> and
//!   <https://docs.anthropic.com/en/api/messages>: a tool's `name` matches
//!   `^[a-zA-Z0-9_-]{1,64}$`, its `input_schema` is an object schema (`"type": "object"`); a
//!   result is a `tool_result` block with `tool_use_id`, `content` and `is_error`;
//! - Gemini: the rules of its `Schema` (<https://ai.google.dev/api/caching#Schema>) and
//!   function declarations (<https://ai.google.dev/api/caching#FunctionDeclaration>), listed
//!   in [`check_gemini_schema`].

#[path = "../common/mod.rs"]
mod common;

// The runtime's schemars, as a user writes it: no schemars dependency of our own.
use agent_circuit_breaker::schemars;
use std::collections::HashMap;

use agent_circuit_breaker::dispatch::{
    ModelApi, Reply, ReplyOutcome, ToolCall, ToolDefinition, ToolDispatch,
};
use agent_circuit_breaker::toolbox;
use common::{block_on, clock};
use serde_json::{Map, Value, json};

// ----- a toolbox with nested structs, optional fields, enums, numbers with formats ----------

/// A point on the map.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Latitude, in degrees.
    lat: f64,
    /// Longitude, in degrees.
    lon: f64,
}

/// The units distances are given in.
#[derive(Debug, Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Units {
    /// Metres and kilometres.
    Metric,
    /// Feet and miles.
    Imperial,
}

/// A box on the map.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Area {
    /// The south-west corner.
    south_west: Point,
    /// The north-east corner.
    north_east: Point,
    /// A name for the box, if it has one.
    label: Option<String>,
    /// How many floors to search (0: every floor).
    #[serde(default)]
    floors: u32,
}

#[derive(Default)]
pub struct Maps;

#[toolbox(json, policy(threshold = 2, budget = 5))]
impl Maps {
    /// Finds places near a point.
    #[tool(provides = "place search", fallback = "ask the user where to look")]
    fn nearby(
        &self,
        /// Where to look.
        center: Point,
        /// How far, in metres.
        radius_m: u32,
        /// The units of the answer.
        units: Option<Units>,
        /// At most this many places.
        limit: Option<u8>,
        /// Kinds of place.
        kinds: Vec<String>,
    ) -> Result<String, std::io::Error> {
        let units = units.unwrap_or(Units::Metric);
        Ok(format!(
            "{} places of {kinds:?} within {radius_m} of {:.1},{:.1} ({units:?})",
            limit.unwrap_or(3),
            center.lat,
            center.lon
        ))
    }

    /// Counts the buildings in a box.
    #[tool(provides = "building counts", fallback = "ask the user to count them")]
    fn buildings(&self, area: Area) -> Result<String, std::io::Error> {
        let label = area.label.as_deref().unwrap_or("the box");
        let width = area.north_east.lon - area.south_west.lon;
        Ok(format!(
            "{label}: 12 buildings, {} floors, {width:.1} wide",
            area.floors
        ))
    }

    /// Tags a place.
    #[tool(provides = "tagging", fallback = "note the tags for the user")]
    fn tag(&self, place: String, tags: HashMap<String, String>) -> Result<usize, std::io::Error> {
        let _ = place;
        Ok(tags.len())
    }

    /// Fails: the geocoder is down.
    #[tool(provides = "geocoding", fallback = "ask the user for coordinates")]
    fn geocode(&self, address: String) -> Result<Point, std::io::Error> {
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("geocoder unreachable for {address}"),
        ))
    }

    /// The server's time.
    #[tool(provides = "the time", fallback = "ask the user for the time")]
    fn now(&self) -> Result<u64, std::io::Error> {
        Ok(42)
    }
}

fn maps() -> GuardedMaps {
    let clock = clock();
    GuardedMaps::with_expeditor(Maps, |b| b.clock(clock))
}

fn definition(tools: &GuardedMaps, name: &str) -> ToolDefinition {
    tools
        .definitions()
        .into_iter()
        .find(|d| d.name == name)
        .expect("a tool of the toolbox")
}

// ----- the published OpenAI definitions ---------------------------------------------------

/// A validator for the definition `name` of `schemas/openai.json`.
fn openai(name: &str) -> jsonschema::Validator {
    let text = include_str!("schemas/openai.json");
    let mut schema: Value = serde_json::from_str(text).expect("the schema file is JSON");
    schema["$ref"] = json!(format!("#/$defs/{name}"));
    jsonschema::draft202012::new(&schema).expect("a valid JSON Schema")
}

fn assert_valid(validator: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\nin {instance:#}");
}

// ----- strict mode's rules ----------------------------------------------------------------

/// The string formats strict mode takes.
const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Strict mode's rules, on every schema of `parameters`: the root an object; every object
/// closed, every property required; `anyOf` only; `$ref` alone; only the keywords it takes.
fn check_strict(parameters: &Value) {
    assert_eq!(parameters["type"], "object", "the root is an object");
    check_strict_schema(parameters, "#");
    if let Some(defs) = parameters.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            check_strict_schema(def, &format!("#/$defs/{name}"));
        }
    }
}

fn check_strict_schema(schema: &Value, at: &str) {
    let map = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: a schema object"));
    if map.contains_key("$ref") {
        assert_eq!(map.len(), 1, "{at}: a $ref stands alone: {schema}");
        return;
    }
    const KEYWORDS: [&str; 20] = [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "$defs",
        "definitions",
    ];
    for key in map.keys() {
        assert!(
            KEYWORDS.contains(&key.as_str()),
            "{at}: `{key}` in strict mode"
        );
    }
    if let Some(format) = map.get("format") {
        assert!(
            STRICT_FORMATS.contains(&format.as_str().unwrap()),
            "{at}: format {format}"
        );
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        assert_eq!(map["additionalProperties"], false, "{at}: closed");
        let required: Vec<&str> = map["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(required, names, "{at}: every property required");
        for (name, property) in properties {
            check_strict_schema(property, &format!("{at}/properties/{name}"));
        }
    }
    if let Some(items) = map.get("items") {
        check_strict_schema(items, &format!("{at}/items"));
    }
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        for (i, branch) in branches.iter().enumerate() {
            check_strict_schema(branch, &format!("{at}/anyOf/{i}"));
        }
    }
}

// ----- Gemini's rules ---------------------------------------------------------------------

/// Gemini's `Schema` (<https://ai.google.dev/api/caching#Schema>), as checked here:
///
/// 1. only its fields: `type`, `format`, `title`, `description`, `nullable`, `enum`,
///    `maxItems`, `minItems`, `properties`, `required`, `minProperties`, `maxProperties`,
///    `minLength`, `maxLength`, `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`,
///    `items`, `minimum`, `maximum` — so no `$ref`, `$defs`, `additionalProperties`, `oneOf`,
///    `allOf`, `const`;
/// 2. `type` one of `STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`, `OBJECT` (one type, not
///    a list: a `null` is said with `nullable`);
/// 3. `format`: `float` or `double` for a NUMBER, `int32` or `int64` for an INTEGER, `enum` or
///    `date-time` for a STRING;
/// 4. `enum` on a STRING only, its values strings;
/// 5. an OBJECT has properties (Gemini refuses "properties: should be non-empty for OBJECT
///    type"), and `required` names only those;
/// 6. an ARRAY has `items`.
fn check_gemini_schema(schema: &Value, at: &str) {
    const FIELDS: [&str; 22] = [
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    ];
    let map = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: an object"));
    for key in map.keys() {
        assert!(
            FIELDS.contains(&key.as_str()),
            "{at}: `{key}` is no Schema field"
        );
    }
    if let Some(branches) = map.get("anyOf") {
        for (i, branch) in branches.as_array().unwrap().iter().enumerate() {
            check_gemini_schema(branch, &format!("{at}/anyOf/{i}"));
        }
        return;
    }
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{at}: one type: {schema}"));
    assert!(
        ["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"].contains(&kind),
        "{at}: type {kind}"
    );
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        let allowed: &[&str] = match kind {
            "NUMBER" => &["float", "double"],
            "INTEGER" => &["int32", "int64"],
            "STRING" => &["enum", "date-time"],
            _ => &[],
        };
        assert!(allowed.contains(&format), "{at}: format {format} on {kind}");
    }
    if let Some(values) = map.get("enum") {
        assert_eq!(kind, "STRING", "{at}: enum on a string");
        assert!(values.as_array().unwrap().iter().all(Value::is_string));
    }
    if kind == "OBJECT" {
        let properties = map["properties"].as_object().unwrap();
        assert!(!properties.is_empty(), "{at}: an object has properties");
        if let Some(required) = map.get("required") {
            for name in required.as_array().unwrap() {
                assert!(
                    properties.contains_key(name.as_str().unwrap()),
                    "{at}: {name}"
                );
            }
        }
        for (name, property) in properties {
            check_gemini_schema(property, &format!("{at}/properties/{name}"));
        }
    }
    if kind == "ARRAY" {
        check_gemini_schema(&map["items"], &format!("{at}/items"));
    }
}

/// The names each API accepts for a tool (OpenAI, Anthropic: `^[a-zA-Z0-9_-]{1,64}$`; Gemini:
/// letters, digits, `_`, `-`, up to 63 or 64).
fn assert_name(name: &Value) {
    let name = name.as_str().unwrap();
    assert!(
        (1..=63).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{name}"
    );
}

// ----- the tools --------------------------------------------------------------------------

#[test]
fn b18_openai_chat_tools_fit_the_published_definition_and_are_strict_where_the_schema_allows() {
    let tools = maps();
    let validator = openai("ChatCompletionTool");
    let mut strict = Vec::new();
    for tool in tools.definitions_for(ModelApi::OpenAiChat) {
        assert_valid(&validator, &tool);
        let function = &tool["function"];
        assert_name(&function["name"]);
        if function["strict"] == true {
            check_strict(&function["parameters"]);
            strict.push(function["name"].as_str().unwrap().to_owned());
        }
    }
    // A map of tags has no strict form: that one tool goes as it is.
    assert_eq!(strict, ["nearby", "buildings", "geocode", "now"]);
    let tag = definition(&tools, "tag").to_api(ModelApi::OpenAiChat);
    assert_eq!(tag["function"]["strict"], false);
    assert_eq!(
        tag["function"]["parameters"],
        Value::Object(definition(&tools, "tag").input_schema)
    );
}

#[test]
fn b18_openai_responses_tools_fit_the_published_definition() {
    let tools = maps();
    let validator = openai("FunctionTool");
    for tool in tools.definitions_for(ModelApi::OpenAiResponses) {
        assert_valid(&validator, &tool);
        assert_name(&tool["name"]);
        assert!(tool.get("function").is_none(), "flat, not nested: {tool}");
        if tool["strict"] == true {
            check_strict(&tool["parameters"]);
        }
        let chat = definition(&tools, tool["name"].as_str().unwrap()).to_api(ModelApi::OpenAiChat);
        assert_eq!(tool["parameters"], chat["function"]["parameters"]);
    }
}

#[test]
fn b18_strict_parameters_keep_nested_structs_optional_fields_enums_and_formats_as_strict_mode_says()
{
    let tools = maps();
    let nearby = definition(&tools, "nearby").to_api(ModelApi::OpenAiChat);
    let parameters = &nearby["function"]["parameters"];
    let properties = &parameters["properties"];
    // Optional: nullable, and required like every property.
    assert_eq!(properties["limit"]["type"], json!(["integer", "null"]));
    assert_eq!(
        properties["units"]["anyOf"][1],
        json!({"type": "null"}),
        "{parameters:#}"
    );
    // Formats strict mode does not know are dropped; the bounds stay.
    assert!(properties["radius_m"].get("format").is_none());
    assert_eq!(properties["radius_m"]["minimum"], 0);
    // The nested struct: its `$ref` has the parameter's description beside it, which strict
    // mode refuses, so the struct is inlined under it; `$defs` are strict too.
    assert_eq!(properties["center"]["description"], "Where to look.");
    assert_eq!(properties["center"]["required"], json!(["lat", "lon"]));
    assert!(properties["center"].get("$ref").is_none());
    let point = &parameters["$defs"]["Point"];
    assert_eq!(point["additionalProperties"], false);
    assert!(point["properties"]["lat"].get("format").is_none());
    let buildings = definition(&tools, "buildings").to_api(ModelApi::OpenAiChat);
    let area = &buildings["function"]["parameters"]["$defs"]["Area"];
    assert_eq!(
        area["required"],
        json!(["south_west", "north_east", "label", "floors"])
    );
    assert_eq!(
        area["properties"]["floors"]["type"],
        json!(["integer", "null"])
    );
    assert!(area["properties"]["floors"].get("default").is_none());
}

#[test]
fn b18_arguments_that_fit_the_strict_schema_are_taken_by_the_dispatcher_nulls_as_left_out() {
    let tools = maps();
    let nearby = definition(&tools, "nearby").to_api(ModelApi::OpenAiChat);
    let schema = nearby["function"]["parameters"].clone();
    let arguments = json!({
        "center": {"lat": 48.85, "lon": 2.35},
        "radius_m": 500,
        "units": null,
        "limit": null,
        "kinds": ["cafe"]
    });
    assert_valid(&jsonschema::draft202012::new(&schema).unwrap(), &arguments);
    let reply = tools.call("nearby", arguments);
    assert_eq!(reply.outcome, ReplyOutcome::Answered, "{reply:?}");
    assert_eq!(
        reply.value,
        Some(json!(
            "3 places of [\"cafe\"] within 500 of 48.9,2.4 (Metric)"
        ))
    );

    // A property with a default (not an `Option`) sent as `null`: read as left out.
    let buildings = definition(&tools, "buildings").to_api(ModelApi::OpenAiChat);
    let schema = buildings["function"]["parameters"].clone();
    let arguments = json!({"area": {
        "south_west": {"lat": 0.0, "lon": 0.0},
        "north_east": {"lat": 1.0, "lon": 2.5},
        "label": null,
        "floors": null
    }});
    assert_valid(&jsonschema::draft202012::new(&schema).unwrap(), &arguments);
    let reply = tools.call("buildings", arguments);
    assert_eq!(
        reply.value,
        Some(json!("the box: 12 buildings, 0 floors, 2.5 wide")),
        "{reply:?}"
    );
    // Arguments that are wrong with or without their nulls are the model's mistake, told as
    // the decoder read them as sent.
    let reply = tools.call("buildings", json!({"area": null}));
    assert!(
        matches!(reply.outcome, ReplyOutcome::Mistake(_)),
        "{reply:?}"
    );
}

#[test]
fn b18_anthropic_tools_carry_the_input_schema_as_it_is_an_object_schema() {
    let tools = maps();
    for (tool, def) in tools
        .definitions_for(ModelApi::Anthropic)
        .into_iter()
        .zip(tools.definitions())
    {
        let keys: Vec<&str> = tool
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["name", "description", "input_schema"]);
        assert_name(&tool["name"]);
        assert!(tool["description"].is_string());
        assert_eq!(tool["input_schema"]["type"], "object");
        assert_eq!(tool["input_schema"], Value::Object(def.input_schema));
    }
}

#[test]
fn b18_gemini_declarations_keep_to_gemini_s_schema_subset() {
    let tools = maps();
    for tool in tools.definitions_for(ModelApi::Gemini) {
        assert_name(&tool["name"]);
        assert!(tool["description"].is_string());
        match tool.get("parameters") {
            Some(parameters) => {
                assert_eq!(parameters["type"], "OBJECT");
                check_gemini_schema(parameters, &format!("{}", tool["name"]));
            }
            None => assert_eq!(tool["name"], "now", "only a tool without parameters"),
        }
    }
    let nearby = definition(&tools, "nearby").to_api(ModelApi::Gemini);
    let properties = &nearby["parameters"]["properties"];
    // `$ref` inlined; `double` kept, `uint32` made `int64`, `uint8` made `int32`.
    assert_eq!(
        properties["center"]["properties"]["lat"]["format"],
        "double"
    );
    assert_eq!(properties["radius_m"]["format"], "int64");
    assert_eq!(properties["limit"]["format"], "int32");
    assert_eq!(properties["limit"]["nullable"], true);
    // The enum, documented per variant, is a string enum.
    assert_eq!(properties["units"]["type"], "STRING");
    assert_eq!(properties["units"]["enum"], json!(["metric", "imperial"]));
    assert_eq!(properties["units"]["nullable"], true);
    assert_eq!(
        nearby["parameters"]["required"],
        json!(["center", "radius_m", "kinds"])
    );
    // A map has no form in Gemini's subset: taken as JSON text, said in the description.
    let tag = definition(&tools, "tag").to_api(ModelApi::Gemini);
    assert_eq!(tag["parameters"]["properties"]["tags"]["type"], "STRING");
}

#[test]
fn b18_the_offer_in_each_api_s_shape_leaves_out_an_open_tool() {
    let tools = maps();
    for _ in 0..2 {
        let reply = tools.call("geocode", json!({"address": "1 rue de Rivoli"}));
        assert!(matches!(reply.outcome, ReplyOutcome::Failed { .. }));
    }
    for api in ModelApi::ALL {
        let names: Vec<String> = tools
            .offered_for(api)
            .iter()
            .map(|t| {
                let name = if api == ModelApi::OpenAiChat {
                    &t["function"]["name"]
                } else {
                    &t["name"]
                };
                name.as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(names, ["nearby", "buildings", "tag", "now"], "{api:?}");
    }
}

// ----- calls and results ------------------------------------------------------------------

/// A model's call of `nearby` with id `id`, as each API's response gives it.
fn call_from(api: ModelApi, id: &str) -> Value {
    let arguments = json!({"center": {"lat": 1.0, "lon": 2.0}, "radius_m": 10, "kinds": []});
    match api {
        ModelApi::OpenAiChat => json!({
            "id": id, "type": "function",
            "function": {"name": "nearby", "arguments": arguments.to_string()}
        }),
        ModelApi::OpenAiResponses => json!({
            "type": "function_call", "id": "fc_1", "call_id": id, "name": "nearby",
            "arguments": arguments.to_string(), "status": "completed"
        }),
        ModelApi::Anthropic => json!({
            "type": "tool_use", "id": id, "name": "nearby", "input": arguments
        }),
        ModelApi::Gemini => {
            json!({"functionCall": {"id": id, "name": "nearby", "args": arguments}})
        }
        _ => unreachable!("every API is listed"),
    }
}

#[test]
fn b18_a_call_read_from_each_api_is_made_with_its_id_and_answered_with_it() {
    let tools = maps();
    assert_valid(
        &openai("ChatCompletionMessageToolCall"),
        &call_from(ModelApi::OpenAiChat, "call_1"),
    );
    assert_valid(
        &openai("FunctionToolCall"),
        &call_from(ModelApi::OpenAiResponses, "call_2"),
    );
    let chat_result = openai("ChatCompletionRequestToolMessage");
    let responses_result = openai("FunctionCallOutputItemParam");
    for (api, id) in ModelApi::ALL
        .into_iter()
        .zip(["call_1", "call_2", "toolu_3", "g4"])
    {
        let call = ToolCall::from_api(api, &call_from(api, id)).expect("a call");
        assert_eq!((call.id.as_str(), call.name.as_str()), (id, "nearby"));
        let reply = block_on(tools.dispatch_call(call));
        assert_eq!(reply.outcome, ReplyOutcome::Answered, "{reply:?}");
        assert_eq!(reply.call_id.as_deref(), Some(id));
        let message = reply.to_message(api);
        let text = "3 places of [] within 10 of 1.0,2.0 (Metric)";
        match api {
            ModelApi::OpenAiChat => {
                assert_valid(&chat_result, &message);
                assert_eq!(
                    message,
                    json!({"role": "tool", "tool_call_id": id, "content": text})
                );
            }
            ModelApi::OpenAiResponses => {
                assert_valid(&responses_result, &message);
                assert_eq!(
                    message,
                    json!({"type": "function_call_output", "call_id": id, "output": text})
                );
            }
            ModelApi::Anthropic => assert_eq!(
                message,
                json!({"type": "tool_result", "tool_use_id": id, "content": text, "is_error": false})
            ),
            ModelApi::Gemini => assert_eq!(
                message,
                json!({"functionResponse": {"id": id, "name": "nearby", "response": {"output": text}}})
            ),
            _ => unreachable!(),
        }
    }
    // What is not a call is none.
    assert_eq!(
        ToolCall::from_api(ModelApi::Anthropic, &json!({"type": "text", "text": "hi"})),
        None
    );
    assert_eq!(
        ToolCall::from_api(ModelApi::OpenAiResponses, &json!({"type": "message"})),
        None
    );
}

#[test]
fn b18_a_failure_is_answered_as_an_error_in_each_api_with_its_call_id_and_arguments_not_json_are_the_model_s_mistake()
 {
    let tools = maps();
    let call = ToolCall::new("call_9", "geocode", json!({"address": "nowhere"}));
    let reply = block_on(tools.dispatch_call(call));
    assert!(reply.is_error());
    assert_valid(
        &openai("ChatCompletionRequestToolMessage"),
        &reply.to_message(ModelApi::OpenAiChat),
    );
    assert_valid(
        &openai("FunctionCallOutputItemParam"),
        &reply.to_message(ModelApi::OpenAiResponses),
    );
    let anthropic = reply.to_message(ModelApi::Anthropic);
    assert_eq!(anthropic["is_error"], true);
    assert_eq!(anthropic["tool_use_id"], "call_9");
    let gemini = reply.to_message(ModelApi::Gemini);
    assert!(gemini["functionResponse"]["response"]["error"].is_string());
    assert!(
        gemini["functionResponse"]["response"]
            .get("output")
            .is_none()
    );
    // The failure's ledger line names the call.
    let budget = tools.expeditor().budget();
    let line = budget.ledger().last().expect("the failure is written down");
    assert_eq!(line.call_id.as_deref(), Some("call_9"));

    // OpenAI's arguments are a JSON string; one that is not JSON is kept, and answered as
    // the model's mistake.
    let broken = json!({"id": "call_10", "type": "function",
        "function": {"name": "nearby", "arguments": "{not json"}});
    let call = ToolCall::from_api(ModelApi::OpenAiChat, &broken).unwrap();
    assert_eq!(call.arguments, json!("{not json"));
    let reply = block_on(tools.dispatch_call(call));
    assert!(
        matches!(reply.outcome, ReplyOutcome::Mistake(_)),
        "{reply:?}"
    );
    assert_eq!(reply.call_id.as_deref(), Some("call_10"));
    // A call made without an id answers with none; Gemini's message then has no `id`.
    let reply: Reply = tools.call("now", Value::Null);
    assert_eq!(reply.call_id, None);
    assert!(
        reply.to_message(ModelApi::Gemini)["functionResponse"]
            .get("id")
            .is_none()
    );
}

// ----- hostile schemas --------------------------------------------------------------------

fn hand_made(schema: Value) -> ToolDefinition {
    ToolDefinition {
        name: "hostile".into(),
        description: String::new(),
        input_schema: match schema {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("weird".into(), other);
                map
            }
        },
    }
}

#[test]
fn b18_hostile_schemas_convert_without_panicking_in_bounded_time_and_size() {
    // Nested far deeper than serde_json would parse.
    let mut deep = json!({"type": "string"});
    for _ in 0..500 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    // References that fan out: each names the next twice (2^40 schemas if inlined).
    let mut defs = Map::new();
    for i in 0..40 {
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {
                "a": {"$ref": format!("#/$defs/D{}", i + 1), "description": "a"},
                "b": {"$ref": format!("#/$defs/D{}", i + 1), "description": "b"}
            }}),
        );
    }
    defs.insert("D40".into(), json!({"type": "string"}));
    let fan_out = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}},
        "$defs": defs});
    let schemas = [
        deep,
        fan_out,
        // A cycle of references, with and without keywords beside them.
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B", "description": "b"}}},
                      "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "a"}}}}}),
        json!({"type": "object", "properties": {"self": {"$ref": "#", "description": "me"}}}),
        json!({"$ref": "#"}),
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/%ZZ~2/"}}}),
        json!({"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}}),
        json!({"type": 5, "properties": [1, 2], "required": "all", "enum": {"a": 1}}),
        json!({"type": ["string", "integer", "null"], "enum": [1, "a", null], "format": 7}),
        json!({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 0, "enum": [1, 2, 3]}}}),
        json!({"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}}),
        json!({"anyOf": [], "oneOf": [true, false], "allOf": [{"$ref": "#"}]}),
        json!("not a schema"),
    ];
    let started = std::time::Instant::now();
    for schema in schemas {
        let definition = hand_made(schema);
        for api in ModelApi::ALL {
            let tool = definition.to_api(api);
            let size = tool.to_string().len();
            assert!(size < 4_000_000, "{api:?}: {size} bytes");
        }
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
