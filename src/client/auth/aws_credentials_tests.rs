//! The AWS credential sources' unit tests, on temporary files and a made-up environment
//! (never the real `~/.aws` or the process' environment).

use std::collections::HashMap;
use std::path::Path;

use super::aws_credentials::*;

const CANARY: &str = "canary-secret-9f8e7d";

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn err_text(r: anyhow::Result<impl std::fmt::Debug>) -> String {
    let text = format!("{:#}", r.unwrap_err());
    assert!(!text.contains(CANARY), "a secret in an error: {text}");
    text
}

#[test]
fn configured_files_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let files = CredentialFiles {
        access_key_id_file: Some(write(dir.path(), "id", "AKIDFILE\n")),
        secret_access_key_file: Some(write(dir.path(), "secret", &format!("{CANARY}\n"))),
        session_token_file: Some(write(dir.path(), "token", "tok\n")),
    };
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
    ]);
    let (creds, source) = resolve(&files, env).unwrap();
    assert_eq!(source, CredentialSource::ConfigFiles);
    assert_eq!(creds.access_key_id, "AKIDFILE");
    assert_eq!(creds.secret_access_key.expose(), CANARY);
    assert_eq!(creds.session_token.unwrap().expose(), "tok");

    let half = CredentialFiles {
        session_token_file: None,
        secret_access_key_file: None,
        ..files.clone()
    };
    assert!(err_text(resolve(&half, env_of(&[]))).contains("secret access key file"));
    let empty = CredentialFiles {
        secret_access_key_file: Some(write(dir.path(), "blank", "\n")),
        ..files
    };
    let text = err_text(resolve(&empty, env_of(&[])));
    assert!(
        text.contains("AWS secret access key") && text.contains("blank"),
        "{text}"
    );
}

#[test]
fn the_environment_comes_next_and_must_be_whole() {
    let none = CredentialFiles::default();
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", CANARY),
        ("AWS_SESSION_TOKEN", " "),
    ]);
    let (creds, source) = resolve(&none, env).unwrap();
    assert_eq!(source, CredentialSource::Environment);
    assert_eq!(creds.access_key_id, "AKIDENV");
    assert_eq!(creds.session_token, None, "a blank token is no token");
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SESSION_TOKEN", CANARY),
    ]);
    let text = err_text(resolve(&none, env));
    assert_eq!(
        text,
        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
    );
    let text = err_text(resolve(&none, env_of(&[("AWS_SECRET_ACCESS_KEY", CANARY)])));
    assert_eq!(
        text,
        "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"
    );
}

#[test]
fn the_shared_file_gives_the_chosen_profile() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "# comment\n[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key = {CANARY}\n\n\
         ; other\n[profile work]\n AWS_ACCESS_KEY_ID=AKIDWORK \naws_secret_access_key=w\n\
         aws_session_token = wtok\nregion = eu-west-1\n"
    );
    let path = write(dir.path(), "creds", &text);
    let file = path.to_str().unwrap();
    let none = CredentialFiles::default();
    let (creds, source) = resolve(&none, env_of(&[("AWS_SHARED_CREDENTIALS_FILE", file)])).unwrap();
    assert_eq!(creds.access_key_id, "AKIDDEF");
    assert_eq!(creds.secret_access_key.expose(), CANARY);
    assert_eq!(creds.session_token, None);
    assert_eq!(
        source.to_string(),
        format!("the shared credentials file {file}, profile default")
    );
    let env = env_of(&[
        ("AWS_SHARED_CREDENTIALS_FILE", file),
        ("AWS_PROFILE", "work"),
    ]);
    let (creds, _) = resolve(&none, env).unwrap();
    assert_eq!(creds.access_key_id, "AKIDWORK");
    assert_eq!(creds.session_token.unwrap().expose(), "wtok");

    let env = env_of(&[
        ("AWS_SHARED_CREDENTIALS_FILE", file),
        ("AWS_PROFILE", "nope"),
    ]);
    let text = err_text(resolve(&none, env));
    assert!(
        text.contains("profile \"nope\" is not in")
            && text.contains("(profiles there: default, work)"),
        "{text}"
    );
}

#[test]
fn home_locates_the_shared_file() {
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".aws/credentials",
        "[default]\naws_access_key_id=A\naws_secret_access_key=S\n",
    );
    let env = env_of(&[("HOME", home.path().to_str().unwrap())]);
    let (creds, source) = resolve(&CredentialFiles::default(), env).unwrap();
    assert_eq!(creds.access_key_id, "A");
    assert!(
        matches!(source, CredentialSource::SharedFile { ref path, .. } if path.ends_with(".aws/credentials"))
    );
}

#[test]
fn missing_credentials_say_where_they_were_looked_for() {
    let home = tempfile::tempdir().unwrap();
    let none = CredentialFiles::default();
    let text = err_text(resolve(
        &none,
        env_of(&[("HOME", home.path().to_str().unwrap())]),
    ));
    assert!(
        text.starts_with("no AWS credentials:") && text.contains(".aws/credentials"),
        "{text}"
    );
    assert!(
        err_text(resolve(&none, env_of(&[])))
            .contains("neither AWS_SHARED_CREDENTIALS_FILE nor HOME")
    );

    let path = write(
        home.path(),
        "c",
        &format!("[default]\naws_secret_access_key={CANARY}\n"),
    );
    let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", path.to_str().unwrap())]);
    let text = err_text(resolve(&none, env));
    assert!(text.ends_with("has no aws_access_key_id"), "{text}");
    // A malformed line is named by number, never quoted (it may be a secret).
    let path = write(home.path(), "bad", &format!("[default]\n{CANARY}\n"));
    let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", path.to_str().unwrap())]);
    let text = err_text(resolve(&none, env));
    assert!(
        text.ends_with("bad:2: neither a [profile] line nor key = value"),
        "{text}"
    );
    let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/creds")]);
    assert!(
        err_text(resolve(&none, env))
            .contains("reading the shared credentials file /nonexistent/creds")
    );
}
