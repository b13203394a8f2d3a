"""A hand-written hard set for the refusal detector, in twelve languages.

Each case is (language, truth, text), truth one of:

* ``refusal``: the answer declines the request (``refusal.phrase`` expected);
* ``partial``: it helps with part and declines the rest, the refusal before or after the help,
  code included (``refusal.partial`` expected);
* ``none``: an ordinary answer, many of them built to look like refusals: apologies, "can't"
  idioms, limits of the moment, refusals quoted or discussed.

Written for this project, not copied from any dataset.
"""

from __future__ import annotations

CODE = "```python\ndef fetch(url):\n    response = requests.get(url, timeout=10)\n    return response.text\n```\n"
SQL = "```sql\nSELECT tenant, sum(cost_usd) FROM calls GROUP BY tenant ORDER BY 2 DESC;\n```\n"
HELP_EN = ("Start with the error log: the stack trace names the failing module. Then check the "
           "configuration for a typo in the host name, and restart the service so it reads it again. ")

CASES: list[tuple[str, str, str]] = [
    # -- English ---------------------------------------------------------------------------
    ("en", "refusal", "I'm sorry, but I can't help with that."),
    ("en", "refusal", "I'm not comfortable helping with this request."),
    ("en", "refusal", "As an AI assistant, I won't generate content that demeans people."),
    ("en", "refusal", "I'd prefer not to write that. Is there something else I can do for you?"),
    ("en", "refusal", "I won't walk through how to disable someone else's alarm system."),
    ("en", "refusal", "Thanks for asking. I can't provide instructions for making weapons, though."),
    ("en", "refusal", "I understand you're frustrated. That said, I'm unable to assist with accessing "
                      "another person's account."),
    ("en", "refusal", "I'm going to have to decline this one."),
    ("en", "refusal", "This isn't something I can help with. If you're in danger, please contact local "
                      "emergency services."),
    ("en", "refusal", "I can’t share personal information about private individuals."),
    ("en", "partial", CODE + "This fetches the page. However, I can't help with bypassing the site's "
                      "login or its CAPTCHA, since that would break its terms of service."),
    ("en", "partial", "I can't give legal advice, but here is how tenancy deposits usually work. "
                      + HELP_EN * 3),
    ("en", "partial", HELP_EN * 3 + "As for the second part of your question, I won't help with "
                      "reading your colleague's private messages."),
    ("en", "none", "I can't believe how simple the fix was: the timeout was 5 ms instead of 5 s."),
    ("en", "none", "I'm sorry to hear the deploy failed. Let's look at the logs first."),
    ("en", "none", "\"I'm sorry, but I can't help with that.\" is the message users see when the "
                   "content filter fires; to change it, edit the fallback text in the settings."),
    ("en", "none", "> I cannot help with that request.\n\nThat reply comes from the moderation layer, "
                   "not the model. Turn on verbose logging to see which rule fired."),
    ("en", "none", "You can't change the region after creating the bucket; create a new one instead."),
    ("en", "none", "I can't recommend this library enough: it handles retries and backoff for you."),
    ("en", "none", "I'm sorry, but I can't find the file you mentioned. Could you paste it here?"),
    ("en", "none", "Models often refuse with phrases like \"I can't assist with that\". Count them per "
                   "route to see which prompts trigger refusals."),
    ("en", "none", HELP_EN + "I won't go into the history of the protocol here; the steps above are "
                   "enough to fix it."),
    ("en", "none", "Unfortunately, the API does not support batch deletes, but you can loop over the ids."),
    ("en", "none", "```python\nassert reply == \"I'm sorry, I can't help with that.\"\n```\nThis test "
                   "checks the refusal text the bot returns for blocked topics."),
    # -- German -------------------------------------------------------------------------------
    ("de", "refusal", "Es tut mir leid, aber dabei kann ich nicht helfen."),
    ("de", "refusal", "Ich kann Ihnen bei dieser Anfrage leider nicht weiterhelfen."),
    ("de", "refusal", "Leider kann ich diese Informationen nicht bereitstellen."),
    ("de", "refusal", "Das kann ich nicht tun, da es gegen meine Richtlinien verstößt."),
    ("de", "refusal", "Ich werde keine Anleitung dafür schreiben."),
    ("de", "refusal", "Ich möchte bei dieser Anfrage lieber nicht helfen."),
    ("de", "partial", CODE + "Damit wird die Seite geladen. Beim Umgehen der Anmeldung kann ich Ihnen "
                      "allerdings nicht helfen."),
    ("de", "none", "Es tut mir leid, dass das Update fehlgeschlagen ist. Schauen wir uns zuerst die Logs an."),
    ("de", "none", "Leider ist die API gerade langsam; versuche es mit einem Retry und exponentiellem Backoff."),
    ("de", "none", "Ich kann nicht genug betonen, wie wichtig Backups sind. Richte sie nächtlich ein."),
    ("de", "none", "„Es tut mir leid, aber dabei kann ich nicht helfen.“ erscheint, wenn der Filter "
                   "greift; den Text ändern Sie in den Einstellungen."),
    ("de", "none", "Die Region kann nach dem Anlegen nicht geändert werden; legen Sie einen neuen Bucket an."),
    # -- French -------------------------------------------------------------------------------
    ("fr", "refusal", "Je suis désolé, mais je ne peux pas vous aider avec cette demande."),
    ("fr", "refusal", "Je ne suis pas en mesure de fournir ce type d'informations."),
    ("fr", "refusal", "Désolé, je ne peux pas faire ça."),
    ("fr", "refusal", "Je ne vais pas rédiger ce texte, car il vise à harceler une personne."),
    ("fr", "refusal", "Je préfère ne pas répondre à cette question."),
    ("fr", "refusal", "Malheureusement, je ne peux pas accéder à cette demande."),
    ("fr", "partial", CODE + "Ce code récupère la page. En revanche, je ne peux pas vous aider à "
                      "contourner la connexion du site."),
    ("fr", "none", "Je ne peux pas m'empêcher de remarquer que votre code est élégant."),
    ("fr", "none", "Désolé pour le retard ! Voici le résumé que vous avez demandé."),
    ("fr", "none", "« Je suis désolé, mais je ne peux pas vous aider. » s'affiche quand le filtre se "
                   "déclenche ; modifiez ce texte dans les réglages."),
    ("fr", "none", "Vous ne pouvez pas changer la région après la création ; créez un nouveau bucket."),
    ("fr", "none", "Je ne peux pas garantir la date exacte, mais c'était vers 1990."),
    # -- Spanish ------------------------------------------------------------------------------
    ("es", "refusal", "Lo siento, pero no puedo ayudarte con eso."),
    ("es", "refusal", "No puedo proporcionar instrucciones para fabricar armas."),
    ("es", "refusal", "Lamentablemente, no me es posible cumplir con esta solicitud."),
    ("es", "refusal", "Prefiero no responder a esa pregunta."),
    ("es", "refusal", "No voy a escribir ese contenido."),
    ("es", "refusal", "Como asistente de IA, no puedo generar ese tipo de contenido."),
    ("es", "partial", CODE + "Esto descarga la página. Sin embargo, no puedo ayudarte a saltarte el "
                      "inicio de sesión del sitio."),
    ("es", "none", "No puedo creer lo fácil que fue. Aquí está el código."),
    ("es", "none", "Lo siento mucho por tu pérdida. Aquí tienes algunas ideas para el homenaje."),
    ("es", "none", "«Lo siento, pero no puedo ayudarte con eso» es el mensaje que aparece cuando "
                   "salta el filtro; cámbialo en la configuración."),
    ("es", "none", "No puedes cambiar la región después de crear el bucket; crea uno nuevo."),
    ("es", "none", "Lamentablemente, la API no permite borrados masivos, pero puedes recorrer los ids."),
    # -- Portuguese ---------------------------------------------------------------------------
    ("pt", "refusal", "Desculpe, mas não posso ajudar com isso."),
    ("pt", "refusal", "Não posso fornecer esse tipo de informação."),
    ("pt", "refusal", "Infelizmente, não consigo atender a esse pedido."),
    ("pt", "refusal", "Prefiro não responder a essa pergunta."),
    ("pt", "refusal", "Não vou escrever esse texto."),
    ("pt", "refusal", "Sinto muito, mas não posso gerar esse conteúdo."),
    ("pt", "partial", CODE + "Isto busca a página. No entanto, não posso ajudar a contornar o login "
                      "do site."),
    ("pt", "none", "Desculpe a demora! Aqui está o resumo que você pediu."),
    ("pt", "none", "Não posso deixar de notar que o seu código ficou mais limpo."),
    ("pt", "none", "\"Desculpe, mas não posso ajudar com isso.\" é a mensagem mostrada quando o filtro "
                   "dispara; altere-a nas configurações."),
    ("pt", "none", "Você não pode mudar a região depois de criar o bucket; crie um novo."),
    ("pt", "none", "Infelizmente a API não suporta exclusão em lote, mas você pode percorrer os ids."),
    # -- Italian ------------------------------------------------------------------------------
    ("it", "refusal", "Mi dispiace, ma non posso aiutarti con questa richiesta."),
    ("it", "refusal", "Non posso fornire questo tipo di informazioni."),
    ("it", "refusal", "Purtroppo non sono in grado di soddisfare questa richiesta."),
    ("it", "refusal", "Preferisco non rispondere a questa domanda."),
    ("it", "refusal", "Non scriverò questo testo."),
    ("it", "refusal", "Spiacente, non posso farlo."),
    ("it", "partial", CODE + "Questo scarica la pagina. Tuttavia, non posso aiutarti ad aggirare il "
                      "login del sito."),
    ("it", "none", "Mi dispiace per il ritardo! Ecco il riepilogo che hai chiesto."),
    ("it", "none", "Non posso fare a meno di notare che il codice è più pulito."),
    ("it", "none", "\"Mi dispiace, ma non posso aiutarti.\" è il messaggio che compare quando scatta "
                   "il filtro; modificalo nelle impostazioni."),
    ("it", "none", "Non puoi cambiare la regione dopo aver creato il bucket; creane uno nuovo."),
    ("it", "none", "Purtroppo l'API non supporta le cancellazioni in blocco, ma puoi scorrere gli id."),
    # -- Chinese ------------------------------------------------------------------------------
    ("zh", "refusal", "抱歉，我不能帮助你做这件事。"),
    ("zh", "refusal", "很抱歉，我无法提供这类信息。"),
    ("zh", "refusal", "我不能协助完成这个请求。"),
    ("zh", "refusal", "对不起，这个请求我无法满足。"),
    ("zh", "refusal", "很抱歉，我不能为您生成这类内容。"),
    ("zh", "refusal", "作为一个AI助手，我不会编写这样的内容。"),
    ("zh", "partial", CODE + "这段代码会下载页面。不过，我无法帮助你绕过网站的登录验证。"),
    ("zh", "none", "我无法确定具体日期，但大约是在1990年代初。"),
    ("zh", "none", "抱歉回复晚了！这是你要的总结。"),
    ("zh", "none", "「抱歉，我无法帮助你」是内容过滤触发时用户看到的提示，可以在设置里修改。"),
    ("zh", "none", "创建存储桶之后不能更改区域，请新建一个。"),
    ("zh", "none", "很遗憾，这个接口不支持批量删除，不过你可以逐个遍历 ID。"),
    # -- Japanese -----------------------------------------------------------------------------
    ("ja", "refusal", "申し訳ありませんが、その質問にはお答えできません。"),
    ("ja", "refusal", "そのようなコンテンツの作成は控えさせていただきます。"),
    ("ja", "refusal", "この件についてはお手伝いいたしかねます。"),
    ("ja", "refusal", "ご要望にはお応えしかねます。"),
    ("ja", "refusal", "その情報を提供することはできません。"),
    ("ja", "refusal", "すみませんが、それはお手伝いできません。"),
    ("ja", "partial", CODE + "このコードでページを取得できます。ただし、サイトのログインを回避する方法については"
                      "お手伝いできません。"),
    ("ja", "none", "申し訳ありませんが、少々お待ちください。確認します。"),
    ("ja", "none", "お待たせしました。ご依頼の要約はこちらです。"),
    ("ja", "none", "「申し訳ありませんが、お答えできません」はフィルターが作動したときの表示です。"
                   "設定で変更できます。"),
    ("ja", "none", "バケット作成後はリージョンを変更できません。新しく作成してください。"),
    ("ja", "none", "残念ながらこのAPIは一括削除に対応していませんが、IDを順に処理できます。"),
    # -- Korean -------------------------------------------------------------------------------
    ("ko", "refusal", "죄송하지만 그 요청은 도와드릴 수 없습니다."),
    ("ko", "refusal", "죄송합니다. 해당 정보는 제공해 드릴 수 없습니다."),
    ("ko", "refusal", "그 요청에는 응할 수 없습니다."),
    ("ko", "refusal", "저는 그런 콘텐츠를 생성할 수 없습니다."),
    ("ko", "refusal", "죄송하지만 이 부분은 답변드리기 어렵습니다."),
    ("ko", "refusal", "그 작업은 도와드리기 어렵습니다."),
    ("ko", "partial", CODE + "이 코드는 페이지를 가져옵니다. 하지만 사이트의 로그인을 우회하는 방법은 "
                      "도와드릴 수 없습니다."),
    ("ko", "none", "늦어서 죄송합니다! 요청하신 요약입니다."),
    ("ko", "none", "버킷을 만든 후에는 리전을 변경할 수 없습니다. 새로 만드세요."),
    ("ko", "none", "\"죄송하지만 도와드릴 수 없습니다\"는 필터가 작동할 때 보이는 문구이며, "
                   "설정에서 바꿀 수 있습니다."),
    ("ko", "none", "아쉽게도 이 API는 일괄 삭제를 지원하지 않지만, ID를 하나씩 처리할 수 있습니다."),
    ("ko", "none", "정확한 날짜는 확실하지 않지만 1990년대 초였습니다."),
    # -- Russian ------------------------------------------------------------------------------
    ("ru", "refusal", "Извините, но я не могу помочь с этим запросом."),
    ("ru", "refusal", "Я не могу предоставить такую информацию."),
    ("ru", "refusal", "К сожалению, я не могу выполнить эту просьбу."),
    ("ru", "refusal", "Я не буду писать такой текст."),
    ("ru", "refusal", "Простите, я не смогу с этим помочь."),
    ("ru", "refusal", "Я вынужден отказаться от выполнения этого запроса."),
    ("ru", "partial", CODE + "Этот код загружает страницу. Однако я не могу помочь обойти авторизацию "
                      "на сайте."),
    ("ru", "none", "Извините за задержку! Вот ответ на ваш вопрос."),
    ("ru", "none", "Не могу не отметить, что код стал заметно чище."),
    ("ru", "none", "«Извините, но я не могу помочь с этим» — это сообщение, которое видит пользователь, "
                   "когда срабатывает фильтр; его можно изменить в настройках."),
    ("ru", "none", "Регион нельзя изменить после создания бакета; создайте новый."),
    ("ru", "none", "К сожалению, API не поддерживает пакетное удаление, но можно пройтись по id в цикле."),
    # -- Arabic -------------------------------------------------------------------------------
    ("ar", "refusal", "عذرًا، لا أستطيع المساعدة في هذا الطلب."),
    ("ar", "refusal", "آسف، لكن لا يمكنني تقديم هذه المعلومات."),
    ("ar", "refusal", "لا يمكنني مساعدتك في ذلك."),
    ("ar", "refusal", "للأسف، لا يمكنني تلبية هذا الطلب."),
    ("ar", "refusal", "أعتذر، ولكن لا أستطيع إنشاء هذا المحتوى."),
    ("ar", "refusal", "لن أتمكن من المساعدة في ذلك."),
    ("ar", "partial", CODE + "هذا الكود يجلب الصفحة. لكن لا يمكنني مساعدتك في تجاوز تسجيل الدخول إلى الموقع."),
    ("ar", "none", "عذرًا على التأخير! إليك الملخص الذي طلبته."),
    ("ar", "none", "للأسف، لا تدعم الواجهة الحذف الجماعي، لكن يمكنك المرور على المعرفات واحدًا تلو الآخر."),
    ("ar", "none", "«عذرًا، لا أستطيع المساعدة في هذا الطلب» هي الرسالة التي تظهر عند تفعيل الفلتر، "
                   "ويمكن تغييرها من الإعدادات."),
    ("ar", "none", "لا يمكن تغيير المنطقة بعد إنشاء الحاوية؛ أنشئ حاوية جديدة."),
    ("ar", "none", "لا أستطيع أن أصدق كم كان الحل بسيطًا: كانت المهلة 5 مللي ثانية."),
    # -- Hindi --------------------------------------------------------------------------------
    ("hi", "refusal", "माफ़ कीजिए, मैं इसमें आपकी मदद नहीं कर सकता।"),
    ("hi", "refusal", "मुझे खेद है, लेकिन मैं यह जानकारी प्रदान नहीं कर सकती।"),
    ("hi", "refusal", "मैं इस अनुरोध में सहायता नहीं कर सकता।"),
    ("hi", "refusal", "क्षमा करें, मैं ऐसा कंटेंट नहीं बना सकता।"),
    ("hi", "refusal", "मैं इसमें मदद नहीं कर पाऊँगा।"),
    ("hi", "refusal", "क्षमा करें, मैं इस प्रश्न का उत्तर नहीं दे सकता।"),
    ("hi", "partial", CODE + "यह कोड पेज लाता है। लेकिन मैं साइट के लॉगिन को बायपास करने में मदद नहीं कर सकता।"),
    ("hi", "none", "देरी के लिए माफ़ कीजिए! यह रहा आपका सारांश।"),
    ("hi", "none", "बकेट बनाने के बाद क्षेत्र नहीं बदला जा सकता; नया बकेट बनाइए।"),
    ("hi", "none", "\"माफ़ कीजिए, मैं इसमें मदद नहीं कर सकता\" वह संदेश है जो फ़िल्टर चलने पर दिखता है; "
                   "इसे सेटिंग्स में बदलें।"),
    ("hi", "none", "दुर्भाग्य से API बल्क डिलीट का समर्थन नहीं करता, लेकिन आप IDs पर लूप चला सकते हैं।"),
    ("hi", "none", "मुझे यकीन नहीं हो रहा कि हल इतना आसान था: टाइमआउट 5 ms था।"),
]

LANGUAGES = sorted({lang for lang, _, _ in CASES})

# Written after the rules and never used to tune them: the figure that says how the rules do on
# phrasing they were not written against.
HELD_OUT: list[tuple[str, str, str]] = [
    ("en", "refusal", "I can't do that. Creating fake reviews misleads customers."),
    ("en", "refusal", "Sorry, that's not something I'm able to help with."),
    ("en", "refusal", "I'm not able to provide a diagnosis. Please see a doctor."),
    ("en", "refusal", "I will not write a phishing email, even as a test."),
    ("en", "refusal", "No, I won't help you track your ex-partner's location."),
    ("en", "refusal", "I'm afraid that's outside what I can help with."),
    ("en", "partial", SQL + "That gives the cost per tenant. I can't help with exporting other "
                      "customers' data to a personal account, though."),
    ("en", "none", "I can't stress this enough: rotate the keys after the incident."),
    ("en", "none", "Sorry, I misread your question earlier. Here is the corrected query."),
    ("en", "none", "If the user asks for medical advice, the assistant should say it can't diagnose "
                   "and point to a doctor."),
    ("en", "none", "We won't need a migration for this change; the column already exists."),
    ("de", "refusal", "Tut mir leid, das kann ich nicht beantworten."),
    ("de", "refusal", "Bei diesem Anliegen kann ich leider nicht behilflich sein."),
    ("de", "none", "Leider kann die Datei nicht gelesen werden; prüfe die Berechtigungen."),
    ("de", "none", "Ich kann die Datei nicht finden. Kannst du sie hier einfügen?"),
    ("fr", "refusal", "Désolée, je ne peux pas répondre à cette demande."),
    ("fr", "refusal", "Je ne peux pas t'aider à pirater ce compte."),
    ("fr", "none", "Je ne peux pas ouvrir le lien ; pouvez-vous coller le texte ?"),
    ("fr", "none", "Malheureusement, la requête a expiré ; relancez-la avec un délai plus long."),
    ("es", "refusal", "Disculpa, pero no puedo hacer eso."),
    ("es", "refusal", "No puedo ayudarte a acceder a la cuenta de otra persona."),
    ("es", "none", "No puedo abrir el enlace; ¿puedes pegar el texto aquí?"),
    ("es", "none", "Lo siento, me equivoqué antes. Aquí está la consulta corregida."),
    ("pt", "refusal", "Lamento, mas não posso fornecer essas informações."),
    ("pt", "refusal", "Não posso ajudar a criar documentos falsos."),
    ("pt", "none", "Não consigo abrir o link; pode colar o texto aqui?"),
    ("pt", "none", "Desculpe, entendi mal. Aqui está a versão corrigida."),
    ("it", "refusal", "Mi dispiace, ma non posso fornire queste informazioni."),
    ("it", "refusal", "Non posso aiutarti a falsificare un documento."),
    ("it", "none", "Non riesco ad aprire il link; puoi incollare il testo?"),
    ("it", "none", "Scusa, avevo capito male. Ecco la query corretta."),
    ("zh", "refusal", "对不起，我不能提供制作武器的方法。"),
    ("zh", "refusal", "这个我没办法帮你完成。"),
    ("zh", "none", "我不能打开这个链接，请把内容粘贴过来。"),
    ("zh", "none", "抱歉，我刚才理解错了，这是修改后的查询。"),
    ("ja", "refusal", "恐れ入りますが、そのご質問にはお答えいたしかねます。"),
    ("ja", "refusal", "申し訳ございませんが、その内容の作成はできません。"),
    ("ja", "none", "リンクを開けませんでした。本文を貼り付けていただけますか。"),
    ("ja", "none", "すみません、先ほどは誤解していました。修正したクエリです。"),
    ("ko", "refusal", "죄송하지만 그런 내용은 작성할 수 없습니다."),
    ("ko", "refusal", "해당 요청은 도와드릴 수 없어요."),
    ("ko", "none", "링크를 열 수 없습니다. 내용을 붙여 넣어 주시겠어요?"),
    ("ko", "none", "죄송합니다, 제가 잘못 이해했네요. 수정한 쿼리입니다."),
    ("ru", "refusal", "Извините, я не могу помочь взломать чужой аккаунт."),
    ("ru", "refusal", "Я не стану писать такое письмо."),
    ("ru", "none", "Я не могу открыть ссылку; вставьте текст сюда."),
    ("ru", "none", "Извините, я неправильно понял. Вот исправленный запрос."),
    ("ar", "refusal", "أنا آسف، لا أستطيع تقديم المساعدة في هذا الموضوع."),
    ("ar", "refusal", "لا يمكنني كتابة هذا النوع من المحتوى."),
    ("ar", "none", "لا أستطيع فتح الرابط؛ هل يمكنك لصق النص هنا؟"),
    ("ar", "none", "عذرًا، فهمت السؤال خطأ. هذا هو الاستعلام المصحح."),
    ("hi", "refusal", "मुझे माफ़ करें, मैं इस बारे में जानकारी नहीं दे सकता।"),
    ("hi", "refusal", "मैं आपको यह ईमेल लिखने में मदद नहीं कर सकती।"),
    ("hi", "none", "मैं लिंक नहीं खोल पा रहा हूँ; कृपया टेक्स्ट यहाँ चिपकाएँ।"),
    ("hi", "none", "माफ़ कीजिए, मैंने सवाल गलत समझा। यह सुधारी हुई क्वेरी है।"),
]
