//! AWS Bedrock's Converse (`client::protocol::converse`) at
//! `/model/{modelId}/converse`, or `/converse-stream` when streamed (AWS's binary
//! event stream). Each request is signed with AWS Signature V4 (service `bedrock`,
//! the `aws.region`) over its final URL and body, with the credentials of `aws:`
//! (files), else the standard environment variables, else the shared credentials
//! file. A Bedrock API key (`api_key`) is sent as a bearer token instead, unsigned.

use super::{Framing, Host, SignerKind, base, encode_segment};
use crate::client::config::{ClientConfig, Endpoint, Provider};
use crate::client::protocol::{self, Protocol};

pub struct Bedrock;

/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

impl Host for Bedrock {
    fn provider(&self) -> Provider {
        Provider::Bedrock
    }

    fn endpoints(&self) -> &'static [Endpoint] {
        &[Endpoint::Chat]
    }

    fn protocol(&self, _endpoint: Endpoint) -> &'static dyn Protocol {
        protocol::converse()
    }

    fn url(&self, cfg: &ClientConfig, streamed: bool) -> String {
        format!(
            "{}/model/{}/{}",
            base(cfg),
            encode_segment(&cfg.model),
            if streamed {
                "converse-stream"
            } else {
                "converse"
            }
        )
    }

    fn signer(&self, cfg: &ClientConfig) -> SignerKind {
        if cfg.api_key.is_some() {
            SignerKind::Static
        } else {
            SignerKind::SigV4
        }
    }

    fn framing(&self) -> Framing {
        Framing::EventStream
    }

    fn otel_provider(&self) -> &'static str {
        "aws.bedrock"
    }

    fn check(&self, cfg: &ClientConfig) -> Result<(), String> {
        let Some(aws) = &cfg.aws else {
            if cfg.api_key.is_some() {
                // A Bedrock API key: a bearer, nothing signed, no region needed.
                return Ok(());
            }
            return Err("provider bedrock needs aws: {region} (and credentials)".into());
        };
        let region = aws.region.trim();
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(format!(
                "aws.region {:?} must be a region such as us-east-1",
                aws.region
            ));
        }
        match (&aws.access_key_id_file, &aws.secret_access_key_file) {
            (Some(_), None) => {
                Err("aws.access_key_id_file is set but aws.secret_access_key_file is not".into())
            }
            (None, Some(_)) => {
                Err("aws.secret_access_key_file is set but aws.access_key_id_file is not".into())
            }
            (None, None) if aws.session_token_file.is_some() => Err(
                "aws.session_token_file needs aws.access_key_id_file and secret_access_key_file"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::AwsConfig;

    #[test]
    fn the_model_id_is_one_encoded_segment() {
        let mut c = ClientConfig {
            base_url: "https://bedrock-runtime.us-east-1.amazonaws.com".into(),
            provider: Some(Provider::Bedrock),
            model: "anthropic.claude-3-haiku-20240307-v1:0".into(),
            aws: Some(AwsConfig {
                region: "us-east-1".into(),
                ..AwsConfig::default()
            }),
            ..ClientConfig::default()
        };
        assert_eq!(
            Bedrock.url(&c, true),
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
        );
        assert!(Bedrock.url(&c, false).ends_with("%3A0/converse"));
        Bedrock.check(&c).unwrap();
        c.aws.as_mut().unwrap().region = "US East".into();
        assert!(Bedrock.check(&c).unwrap_err().contains("aws.region"));
    }
}
