//! Where AWS credentials come from, in this order: files named in the configuration, the
//! standard environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`), then the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`
//! or `~/.aws/credentials`, profile `AWS_PROFILE` or `default`). The environment is a
//! parameter, so tests never read the real one. Errors name what is missing and where,
//! never a value (a line of the shared file may hold a secret, so it is never quoted).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::sigv4::AwsCredentials;
use crate::secret::Secret;

/// Files named in the configuration; each holds one value (surrounding whitespace
/// dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CredentialFiles {
    pub access_key_id_file: Option<PathBuf>,
    pub secret_access_key_file: Option<PathBuf>,
    pub session_token_file: Option<PathBuf>,
}

impl CredentialFiles {
    fn is_empty(&self) -> bool {
        self.access_key_id_file.is_none()
            && self.secret_access_key_file.is_none()
            && self.session_token_file.is_none()
    }
}

/// Where a set of credentials was found, for a log line (no value in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    ConfigFiles,
    Environment,
    SharedFile { path: PathBuf, profile: String },
}

impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialSource::ConfigFiles => f.write_str("the files named in the configuration"),
            CredentialSource::Environment => {
                f.write_str("the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
            }
            CredentialSource::SharedFile { path, profile } => write!(
                f,
                "the shared credentials file {}, profile {profile}",
                path.display()
            ),
        }
    }
}

/// The process' own environment, for [`resolve`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The first complete set of credentials, and where it came from. `env` answers an
/// environment variable's value (`HOME` included); an empty value counts as unset.
pub fn resolve(
    files: &CredentialFiles,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<(AwsCredentials, CredentialSource)> {
    let env = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if !files.is_empty() {
        return Ok((from_files(files)?, CredentialSource::ConfigFiles));
    }
    match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => {
            let creds = AwsCredentials {
                access_key_id: id,
                secret_access_key: Secret::new(secret),
                session_token: env("AWS_SESSION_TOKEN").map(Secret::new),
            };
            return Ok((creds, CredentialSource::Environment));
        }
        (Some(_), None) => bail!("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
        (None, Some(_)) => bail!("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"),
        (None, None) => {}
    }
    let path = match (env("AWS_SHARED_CREDENTIALS_FILE"), env("HOME")) {
        (Some(p), _) => PathBuf::from(p),
        (None, Some(home)) => Path::new(&home).join(".aws/credentials"),
        (None, None) => bail!(
            "no AWS credentials: none named in the configuration, AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY unset, and neither AWS_SHARED_CREDENTIALS_FILE nor HOME \
             set to find a shared credentials file"
        ),
    };
    let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
    if !path.exists() && env("AWS_SHARED_CREDENTIALS_FILE").is_none() {
        bail!(
            "no AWS credentials: none named in the configuration, AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY unset, and no shared credentials file at {}",
            path.display()
        );
    }
    let creds = from_shared_file(&path, &profile)?;
    Ok((creds, CredentialSource::SharedFile { path, profile }))
}

fn from_files(files: &CredentialFiles) -> anyhow::Result<AwsCredentials> {
    let (Some(id_file), Some(secret_file)) =
        (&files.access_key_id_file, &files.secret_access_key_file)
    else {
        bail!(
            "AWS credential files: both the access key id file and the secret access key file \
             must be named (the session token file is optional)"
        );
    };
    let id = Secret::from_file(id_file).context("AWS access key id")?;
    let secret = Secret::from_file(secret_file).context("AWS secret access key")?;
    let token = match &files.session_token_file {
        Some(path) => Some(Secret::from_file(path).context("AWS session token")?),
        None => None,
    };
    Ok(AwsCredentials {
        access_key_id: id.expose().to_string(),
        secret_access_key: secret,
        session_token: token,
    })
}

/// One profile of an INI-style shared credentials file.
fn from_shared_file(path: &Path, profile: &str) -> anyhow::Result<AwsCredentials> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the shared credentials file {}", path.display()))?;
    let mut profiles: Vec<String> = Vec::new();
    let mut section: Option<String> = None;
    let (mut id, mut secret, mut token) = (None, None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            // Some tools write `[profile x]` here too.
            let name = name
                .strip_prefix("profile ")
                .unwrap_or(name)
                .trim()
                .to_string();
            profiles.push(name.clone());
            section = Some(name);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            bail!(
                "{}:{}: neither a [profile] line nor key = value",
                path.display(),
                n + 1
            );
        };
        if section.as_deref() != Some(profile) {
            continue;
        }
        let value = value.trim().to_string();
        match key.trim().to_ascii_lowercase().as_str() {
            "aws_access_key_id" => id = Some(value),
            "aws_secret_access_key" => secret = Some(Secret::new(value)),
            "aws_session_token" | "aws_security_token" => token = Some(Secret::new(value)),
            _ => {}
        }
    }
    if !profiles.iter().any(|p| p == profile) {
        bail!(
            "profile {profile:?} is not in the shared credentials file {} (profiles there: {})",
            path.display(),
            if profiles.is_empty() {
                "none".to_string()
            } else {
                profiles.join(", ")
            }
        );
    }
    let missing = |key: &str| {
        anyhow::anyhow!(
            "profile {profile:?} of the shared credentials file {} has no {key}",
            path.display()
        )
    };
    Ok(AwsCredentials {
        access_key_id: id
            .filter(|v| !v.is_empty())
            .ok_or_else(|| missing("aws_access_key_id"))?,
        secret_access_key: secret
            .filter(|v| !v.is_empty())
            .ok_or_else(|| missing("aws_secret_access_key"))?,
        session_token: token.filter(|v| !v.is_empty()),
    })
}
